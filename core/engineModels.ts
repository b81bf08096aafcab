import { measuredQuality } from './engineQuality';
import { DomainError } from './errors';

/**
 * V9: the models an installation has, and whether a job's language has one. Pure: which models
 * are on the machine is found by providers/installedModels.ts; here only what a language needs
 * and what was measured of it (docs/engines.md), so the web refuses a job whose model is not
 * installed before any attempt starts.
 */

/** One model a person may choose: an engine, the language it reads, the script it was made for. */
export interface EngineModel {
  provider: string;
  /** The code a job names for it (`frk`, `eng`, `en`); `*` for engines that read any language. */
  language: string;
  /** The engine's own model name (`tessdata frk`, `pocketsphinx en-us`, a remote model). */
  model: string;
  script: string;
  /** What docs/engines.md measured of it, where it was measured. */
  quality?: string;
}

/**
 * V9: what a job takes when its request leaves it out: its item's choice, else the nearest
 * collection's up the item's tree.
 */
export interface EngineChoice {
  provider?: string;
  model?: string;
  language?: string;
}

/** Any language: a remote engine whose model is not ours to list. */
export const ANY_LANGUAGE = '*';

/** ISO 639-1 -> ISO 639-2/T as tesseract names its traineddata. */
const ISO_639_1_TO_TESSERACT: Record<string, string> = {
  ar: 'ara',
  cs: 'ces',
  da: 'dan',
  de: 'deu',
  el: 'ell',
  en: 'eng',
  es: 'spa',
  fi: 'fin',
  fr: 'fra',
  he: 'heb',
  hu: 'hun',
  it: 'ita',
  ja: 'jpn',
  la: 'lat',
  nl: 'nld',
  no: 'nor',
  pl: 'pol',
  pt: 'por',
  ru: 'rus',
  sv: 'swe',
  tr: 'tur',
  uk: 'ukr',
  zh: 'chi_sim',
};

/**
 * Maps a job's language to tesseract's language string: 'en' and 'en-GB' -> 'eng'; a
 * tesseract code ('frk', 'deu', 'chi_sim') or a '+'-joined set ('deu+frk') passes through;
 * empty -> 'eng'. Returns undefined when the value cannot be a language.
 */
export function tesseractLanguages(language: string | undefined): string[] | undefined {
  const value = (language ?? '').trim();
  if (value === '') return ['eng'];
  const parts = value.split('+').map((p) => p.trim());
  const out: string[] = [];
  for (const part of parts) {
    const primary = part.split(/[-_](?=[A-Za-z]{2,4}$|\d{3}$)/)[0]!.toLowerCase();
    const mapped = ISO_639_1_TO_TESSERACT[primary];
    if (mapped) out.push(mapped);
    else if (/^[a-z]{3}(?:_[a-z]+)?$/.test(part)) out.push(part);
    else return undefined;
  }
  return [...new Set(out)];
}

/** pocketsphinx models are keyed by the primary subtag (`en`, `en-US` and `eng` are `en`). */
export function speechLanguage(language: string | undefined): string {
  const primary = (language || 'en').trim().split(/[-_]/)[0]!.toLowerCase();
  return primary === 'eng' ? 'en' : primary;
}

/** The model codes a job of this provider and language needs, or undefined when it checks none. */
function modelsNeeded(provider: string, language: string | undefined): string[] | undefined {
  if (provider === 'tesseract') return tesseractLanguages(language) ?? [language ?? ''];
  if (provider === 'pocketsphinx') return [speechLanguage(language)];
  return undefined;
}

/**
 * V9: refuses a job whose language has no installed model of its provider (422
 * `model_not_installed`, naming the model), before anything is written. Engines that read any
 * language, and those this installation does not list, are not checked.
 */
export function checkModelInstalled(
  provider: string,
  language: string | undefined,
  installed: readonly EngineModel[],
): void {
  const needed = modelsNeeded(provider, language);
  if (needed === undefined) return;
  const have = installed.filter((m) => m.provider === provider);
  // An engine with no model on this machine at all is not installed: its calls fail `outage`
  // and its queue pauses until an operator installs it (Q3), as before.
  if (have.length === 0) return;
  if (have.some((m) => m.language === ANY_LANGUAGE)) return;
  const missing = needed.filter((code) => !have.some((m) => m.language === code));
  if (missing.length === 0) return;
  const offered = have.map((m) => m.language).join(', ') || 'none';
  throw new DomainError(
    'model_not_installed',
    `language ${language}: no ${provider} model ${missing.join('+')} is installed (installed: ${offered})`,
    { field: 'language', provider, model: missing.join('+') },
  );
}

/** The script each tesseract model reads, where its code says it. */
const SCRIPTS: Record<string, string> = {
  frk: 'Fraktur',
  ara: 'Arabic',
  ell: 'Greek',
  heb: 'Hebrew',
  jpn: 'Japanese',
  rus: 'Cyrillic',
  ukr: 'Cyrillic',
  chi_sim: 'Han (simplified)',
};

export function scriptOf(provider: string, language: string): string {
  if (language === ANY_LANGUAGE) return 'any';
  if (provider === 'tesseract') return SCRIPTS[language] ?? 'Latin';
  return 'speech';
}

/** One listed model, described with its script and what was measured of it. */
export function describeModel(provider: string, language: string, model: string): EngineModel {
  const quality = measuredQuality(provider, language);
  return {
    provider,
    language,
    model,
    script: scriptOf(provider, language),
    ...(quality ? { quality } : {}),
  };
}
