/**
 * Builds the remote providers from configuration (Q2). The caller passes the environment
 * as a plain object (providers never read process.env); a provider is configured when its
 * base URL is set. Invalid values throw at start, naming the variable but never its value.
 *
 * | variable                     | meaning                                         | default |
 * |------------------------------|-------------------------------------------------|---------|
 * | QUIRE_OPENAI_BASE_URL        | OpenAI-compatible chat/vision, without `/v1`    | (off)   |
 * | QUIRE_OPENAI_API_KEY         | its Bearer key                                  | none    |
 * | QUIRE_OPENAI_MODEL           | its model                                       | gpt-4o-mini |
 * | QUIRE_WHISPER_BASE_URL       | OpenAI-compatible audio transcription           | (off)   |
 * | QUIRE_WHISPER_API_KEY        | its Bearer key (local servers need none)        | none    |
 * | QUIRE_WHISPER_MODEL          | its model                                       | whisper-1 |
 * | QUIRE_WHISPER_DIR            | where its engine jobs live                      | os tmp  |
 * | QUIRE_ASYNC_SPEECH_BASE_URL  | generic async speech-job API                    | (off)   |
 * | QUIRE_ASYNC_SPEECH_API_KEY   | its Bearer key                                  | none    |
 * | QUIRE_ASYNC_SPEECH_MODEL     | sent as `model` when set                        | none    |
 * | QUIRE_PROVIDER_TIMEOUT_MS    | per-call timeout of every remote call           | 240000  |
 */
import type { TranscriptionProvider } from '../core/provider';
import { AsyncSpeechProvider } from './asyncSpeech';
import { DEFAULT_TIMEOUT_MS } from './http';
import { OpenAiAudioProvider } from './openaiAudio';
import { OpenAiChatProvider } from './openaiChat';

export const REMOTE_PROVIDER_NAMES = ['openai-chat', 'whisper', 'async-speech'] as const;

export interface RemoteProviderExtras {
  /** Finds line boxes for the chat provider (e.g. the tesseract provider). */
  fallbackSegmenter?: TranscriptionProvider;
  fetchImpl?: typeof fetch;
}

export interface RemoteConfig {
  timeoutMs: number;
  openaiChat?: { baseUrl: string; apiKey?: string; model: string };
  whisper?: { baseUrl: string; apiKey?: string; model: string; workDir?: string };
  asyncSpeech?: { baseUrl: string; apiKey?: string; model?: string };
}

function value(env: Record<string, string | undefined>, key: string): string | undefined {
  const v = env[key]?.trim();
  return v ? v : undefined;
}

function baseUrl(env: Record<string, string | undefined>, key: string): string | undefined {
  const raw = value(env, key);
  if (raw === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`${key} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new Error(`${key} must be http or https`);
  if (url.username || url.password)
    throw new Error(`${key} must not carry credentials; use the _API_KEY variable`);
  if (url.search || url.hash) throw new Error(`${key} must not have a query or fragment`);
  return url.toString().replace(/\/+$/, '');
}

/** Reads and validates the remote providers' configuration. */
export function parseRemoteConfig(env: Record<string, string | undefined>): RemoteConfig {
  const rawTimeout = value(env, 'QUIRE_PROVIDER_TIMEOUT_MS');
  let timeoutMs = DEFAULT_TIMEOUT_MS;
  if (rawTimeout !== undefined) {
    if (!/^\d+$/.test(rawTimeout) || Number(rawTimeout) < 1 || Number(rawTimeout) > 3_600_000) {
      throw new Error('QUIRE_PROVIDER_TIMEOUT_MS must be an integer between 1 and 3600000');
    }
    timeoutMs = Number(rawTimeout);
  }
  const config: RemoteConfig = { timeoutMs };
  const chatUrl = baseUrl(env, 'QUIRE_OPENAI_BASE_URL');
  if (chatUrl) {
    config.openaiChat = {
      baseUrl: chatUrl,
      apiKey: value(env, 'QUIRE_OPENAI_API_KEY'),
      model: value(env, 'QUIRE_OPENAI_MODEL') ?? 'gpt-4o-mini',
    };
  }
  const whisperUrl = baseUrl(env, 'QUIRE_WHISPER_BASE_URL');
  if (whisperUrl) {
    config.whisper = {
      baseUrl: whisperUrl,
      apiKey: value(env, 'QUIRE_WHISPER_API_KEY'),
      model: value(env, 'QUIRE_WHISPER_MODEL') ?? 'whisper-1',
      workDir: value(env, 'QUIRE_WHISPER_DIR'),
    };
  }
  const speechUrl = baseUrl(env, 'QUIRE_ASYNC_SPEECH_BASE_URL');
  if (speechUrl) {
    config.asyncSpeech = {
      baseUrl: speechUrl,
      apiKey: value(env, 'QUIRE_ASYNC_SPEECH_API_KEY'),
      model: value(env, 'QUIRE_ASYNC_SPEECH_MODEL'),
    };
  }
  return config;
}

/** The configured remote providers: `openai-chat`, `whisper`, `async-speech` (each when its base URL is set). */
export function remoteProvidersFromEnv(
  env: Record<string, string | undefined>,
  extras: RemoteProviderExtras = {},
): TranscriptionProvider[] {
  const config = parseRemoteConfig(env);
  const providers: TranscriptionProvider[] = [];
  if (config.openaiChat) {
    providers.push(
      new OpenAiChatProvider({
        name: 'openai-chat',
        ...config.openaiChat,
        timeoutMs: config.timeoutMs,
        fetchImpl: extras.fetchImpl,
        fallbackSegmenter: extras.fallbackSegmenter,
      }),
    );
  }
  if (config.whisper) {
    providers.push(
      new OpenAiAudioProvider({
        name: 'whisper',
        ...config.whisper,
        timeoutMs: config.timeoutMs,
        fetchImpl: extras.fetchImpl,
      }),
    );
  }
  if (config.asyncSpeech) {
    providers.push(
      new AsyncSpeechProvider({
        name: 'async-speech',
        ...config.asyncSpeech,
        timeoutMs: config.timeoutMs,
        fetchImpl: extras.fetchImpl,
      }),
    );
  }
  return providers;
}
