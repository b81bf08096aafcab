import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import type { QuireConfig } from '../core/config';
import { ANY_LANGUAGE, describeModel, type EngineModel } from '../core/engineModels';
import { enabledProviders } from '../core/providerCatalogue';

/**
 * V9: the models this machine has, for the console to list and for a job's request to be
 * checked against (core/engineModels.ts). Light on purpose (directory listings, no engine is
 * loaded), so the web reads it as the worker's engines do: tesseract's bundled English model,
 * `QUIRE_TESSDATA_DIR`, the machine's own tessdata directory (Debian's `tesseract-ocr-<lang>`),
 * pocketsphinx's models on disk, and the remote engines configured (any language).
 */

/** Where Debian's `tesseract-ocr-<lang>` packages put their traineddata, newest first. */
export const SYSTEM_TESSDATA_DIRS = [
  '/usr/share/tesseract-ocr/5/tessdata',
  '/usr/share/tesseract-ocr/4.00/tessdata',
  '/usr/share/tessdata',
];

function isDirectory(dir: string): boolean {
  try {
    return statSync(dir).isDirectory();
  } catch {
    return false;
  }
}

/**
 * The machine's own tessdata directory, where the system's packages put it (Debian's). A
 * directory elsewhere is named by Quire's one setting for it, `QUIRE_TESSDATA_DIR`.
 */
export function systemTessdataDir(): string | undefined {
  return SYSTEM_TESSDATA_DIRS.find(isDirectory);
}

/** Codes of the `<code>.traineddata` files of a directory; `osd` and `equ` read no language. */
function traineddataIn(dir: string | undefined): string[] {
  if (!dir || !isDirectory(dir)) return [];
  return readdirSync(dir)
    .map((name) => /^([a-z]{3}(?:_[a-z]+)?)\.traineddata$/.exec(name)?.[1])
    .filter((code): code is string => code !== undefined && code !== 'osd' && code !== 'equ');
}

/** The English model tesseract.js ships (`@tesseract.js-data/eng`), a dependency of Quire. */
const BUNDLED_TESSERACT = 'eng';

/** pocketsphinx's models by language, with the acoustic model directory that makes one usable. */
const SPEECH_MODEL_DIRS: Record<string, string> = {
  en: '/usr/share/pocketsphinx/model/en-us/en-us',
};

function tesseractModels(config: Pick<QuireConfig, 'QUIRE_TESSDATA_DIR'>): EngineModel[] {
  const configured = config.QUIRE_TESSDATA_DIR?.trim();
  const codes = new Set([
    BUNDLED_TESSERACT,
    ...traineddataIn(configured ? path.resolve(configured) : undefined),
    ...traineddataIn(systemTessdataDir()),
  ]);
  return [...codes].sort().map((code) => describeModel('tesseract', code, `tessdata ${code}`));
}

function speechModels(): EngineModel[] {
  return Object.entries(SPEECH_MODEL_DIRS)
    .filter(([, dir]) => isDirectory(dir))
    .map(([code, dir]) => describeModel('pocketsphinx', code, path.basename(dir)));
}

/** The configured model of a remote engine, by its catalogue name. */
function remoteModelOf(config: QuireConfig, provider: string): string {
  const models: Record<string, string | undefined> = {
    'openai-chat': config.QUIRE_OPENAI_MODEL,
    whisper: config.QUIRE_WHISPER_MODEL,
    'async-speech': config.QUIRE_ASYNC_SPEECH_MODEL,
  };
  return models[provider] ?? 'default';
}

/** Every model the installation offers, engine by engine, in catalogue order. */
export function installedModels(config: QuireConfig): EngineModel[] {
  const out: EngineModel[] = [];
  for (const entry of enabledProviders(config)) {
    if (entry.name === 'tesseract') out.push(...tesseractModels(config));
    else if (entry.name === 'pocketsphinx') out.push(...speechModels());
    else out.push(describeModel(entry.name, ANY_LANGUAGE, remoteModelOf(config, entry.name)));
  }
  return out;
}
