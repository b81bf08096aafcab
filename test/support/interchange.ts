/**
 * Checkers for the interchange formats (I1-I3): the fixtures in test/fixtures/interchange
 * (sources in its SOURCES.md), libxml2's XSD validation of PAGE XML, and the official IIIF
 * Presentation 3 JSON schema compiled with ajv.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { XmlDocument, XsdValidator } from 'libxml2-wasm';
import { REPO_ROOT } from './fixtures';

export const INTERCHANGE_FIXTURES = path.join(REPO_ROOT, 'test', 'fixtures', 'interchange');

export const KANT = {
  image: path.join(INTERCHANGE_FIXTURES, 'kant_aufklaerung_1784_0017.tif'),
  page: path.join(INTERCHANGE_FIXTURES, 'kant_aufklaerung_1784_0017.page.xml'),
  alto: path.join(INTERCHANGE_FIXTURES, 'kant_aufklaerung_1784_0017.alto.xml'),
  width: 1457,
  height: 2083,
};

/** I6: the real manifesto scan and the hOCR tesseract 5.3.0 wrote for it (SOURCES.md). */
export const MANIFESTO = {
  image: path.join(REPO_ROOT, 'test', 'fixtures', 'real', 'manifesto-page-0015.png'),
  hocr: path.join(INTERCHANGE_FIXTURES, 'manifesto-page-0015.tesseract.hocr'),
};

let pageValidator: XsdValidator | undefined;

/** Errors libxml2 finds validating `xml` against the PAGE 2019-07-15 XSD; empty when valid. */
export function pageSchemaErrors(xml: string): string[] {
  if (!pageValidator) {
    const xsd = XmlDocument.fromBuffer(
      readFileSync(path.join(INTERCHANGE_FIXTURES, 'pagecontent-2019-07-15.xsd')),
    );
    pageValidator = XsdValidator.fromDoc(xsd);
  }
  const doc = XmlDocument.fromString(xml);
  try {
    pageValidator.validate(doc);
    return [];
  } catch (error) {
    const details = (error as { details?: Array<{ message: string; line?: number }> }).details;
    return details?.map((d) => `${d.line ?? '?'}: ${d.message.trim()}`) ?? [String(error)];
  } finally {
    doc.dispose();
  }
}

/** Parses `xml` with libxml2 (throws on anything not well-formed). */
export function parseWithLibxml2(xml: string): XmlDocument {
  return XmlDocument.fromString(xml);
}

let manifestValidator: ReturnType<Ajv['compile']> | undefined;

/** Errors the official IIIF Presentation 3 schema finds in `manifest`; empty when valid. */
export function manifestSchemaErrors(manifest: unknown): string[] {
  if (!manifestValidator) {
    const schema = JSON.parse(
      readFileSync(path.join(INTERCHANGE_FIXTURES, 'iiif-presentation-3.0.schema.json'), 'utf8'),
    );
    const ajv = new Ajv({ strict: false, allErrors: true });
    addFormats(ajv);
    manifestValidator = ajv.compile(schema);
  }
  if (manifestValidator(manifest)) return [];
  return (manifestValidator.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
}
