import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { checkModelInstalled, describeModel, type EngineModel } from '../../core/engineModels';
import { MODEL_QUALITY } from '../../core/engineQuality';
import { DomainError } from '../../core/errors';
import { chooseJobEngine } from '../../core/jobOptions';

const INSTALLED: EngineModel[] = [
  describeModel('tesseract', 'eng', 'tessdata eng'),
  describeModel('tesseract', 'frk', 'tessdata frk'),
  describeModel('pocketsphinx', 'en', 'en-us'),
  describeModel('whisper', '*', 'whisper-1'),
];

function refusal(work: () => unknown) {
  try {
    work();
    return undefined;
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    return { code: error.code, kind: error.kind, details: error.details, message: error.message };
  }
}

describe('V9 a language must have an installed model', () => {
  it('V9 a tesseract language without its traineddata is refused naming the model', () => {
    expect(refusal(() => checkModelInstalled('tesseract', 'frk', INSTALLED))).toBeUndefined();
    expect(refusal(() => checkModelInstalled('tesseract', 'en-GB', INSTALLED))).toBeUndefined();
    expect(refusal(() => checkModelInstalled('tesseract', undefined, INSTALLED))).toBeUndefined();
    const de = refusal(() => checkModelInstalled('tesseract', 'de', INSTALLED));
    expect(de).toMatchObject({ code: 'model_not_installed', kind: 'invalid' });
    expect(de?.details).toMatchObject({ model: 'deu', field: 'language' });
    expect(refusal(() => checkModelInstalled('tesseract', 'xx', INSTALLED))?.code).toBe(
      'model_not_installed',
    );
    expect(refusal(() => checkModelInstalled('tesseract', 'deu+frk', INSTALLED))?.message).toMatch(
      /deu/,
    );
  });

  it('V9 speech models by primary subtag; engines of any language are not checked', () => {
    expect(refusal(() => checkModelInstalled('pocketsphinx', 'en-US', INSTALLED))).toBeUndefined();
    expect(refusal(() => checkModelInstalled('pocketsphinx', 'de', INSTALLED))?.code).toBe(
      'model_not_installed',
    );
    expect(refusal(() => checkModelInstalled('whisper', 'de', INSTALLED))).toBeUndefined();
    expect(refusal(() => checkModelInstalled('simulated', 'xx', INSTALLED))).toBeUndefined();
  });

  it('V9 a job takes the request, else the item or collection, else the default', () => {
    const base = {
      defaultProvider: 'auto',
      kind: 'image' as const,
      enabled: ['tesseract', 'pocketsphinx', 'whisper'],
      models: INSTALLED,
    };
    expect(chooseJobEngine({ ...base, request: {}, inherited: { language: 'frk' } })).toEqual({
      provider: 'tesseract',
      model: undefined,
      language: 'frk',
    });
    expect(
      chooseJobEngine({ ...base, request: { language: 'eng' }, inherited: { language: 'frk' } })
        .language,
    ).toBe('eng');
    expect(
      refusal(() => chooseJobEngine({ ...base, request: {}, inherited: { language: 'de' } }))?.code,
    ).toBe('model_not_installed');
    // Without the installation's list (a test's own client), languages are not checked.
    expect(
      chooseJobEngine({ ...base, models: undefined, request: { language: 'de' }, inherited: {} })
        .language,
    ).toBe('de');
  });

  it('V9 the measured figures the console shows are those of docs/engines.md', () => {
    const doc = readFileSync(new URL('../../docs/engines.md', import.meta.url), 'utf8');
    const row = (needle: string) => doc.split('\n').find((line) => line.includes(needle)) ?? '';
    expect(row('real Fraktur lines, Fraktur model')).toContain(
      MODEL_QUALITY['tesseract:frk']!.cer!.toFixed(3),
    );
    expect(row('real Fraktur lines, **English model**')).toContain(
      MODEL_QUALITY['tesseract:eng']!.cer!.toFixed(3),
    );
    expect(describeModel('tesseract', 'frk', 'tessdata frk')).toMatchObject({
      script: 'Fraktur',
      quality: 'CER 0.074 on 20 real Fraktur lines',
    });
  });
});
