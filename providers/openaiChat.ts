/**
 * An OpenAI-compatible chat/vision provider (Q1, Q2): `POST {baseUrl}/v1/chat/completions`
 * with a Bearer key. Good at handwriting and hard scripts where tesseract fails, and at
 * polishing text; it cannot find line boxes reliably, so `segmentPage` delegates to a
 * configured fallback segmenter (for example the tesseract provider).
 *
 * - recognizeLine: the cropped line (when a `cropLine` function is configured) or the whole
 *   page image with the line's box described, as a data URL, with a transcription
 *   instruction; the answer is one line of text.
 * - polish: the text goes in, corrected text with the same number of lines comes back; a
 *   different number of lines is a malformed answer (`internal`), so the raw text stands.
 * - Cost: the tokens the provider reports (`usage.total_tokens`, unit `token`); one `call`
 *   when it reports none.
 *
 * Failures are classified by providers/http.ts. Nothing here logs; messages carry no text,
 * image or payload.
 */

import { readFile, stat } from 'node:fs/promises';
import type { Box } from '../core/annotation';
import { ProviderError } from '../core/failures';
import type { MediaKind } from '../core/media';
import type {
  CallContext,
  CallCost,
  EngineIdentity,
  ImageEngine,
  LineBox,
  MediaInput,
} from '../core/provider';
import { DEFAULT_TIMEOUT_MS, joinUrl, providerJson, unexpectedShape } from './http';

export interface OpenAiChatOptions {
  /** Registry name; default `openai-chat`. */
  name?: string;
  /** Without `/v1`, e.g. `https://api.openai.com` or `http://127.0.0.1:8000`. */
  baseUrl: string;
  apiKey?: string;
  /** Model used when the job's snapshot names none (or names `default`). */
  model: string;
  timeoutMs?: number;
  fetchImpl?: typeof fetch;
  /** Finds line boxes for `segmentPage` (chat models do not return boxes reliably). */
  fallbackSegmenter?: ImageEngine;
  /** Crops a line out of a page image; without it the page goes whole, with the box described. */
  cropLine?: (image: MediaInput, box: Box) => Promise<{ data: Buffer; mediaType: string }>;
  /** Images larger than this fail `image` before any call; default 20 MB. */
  maxImageBytes?: number;
}

const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/webp', 'image/gif']);

interface ChatMessage {
  role: 'system' | 'user';
  content: string | Array<Record<string, unknown>>;
}

export class OpenAiChatProvider implements ImageEngine {
  readonly name: string;
  private readonly options: OpenAiChatOptions;

  constructor(options: OpenAiChatOptions) {
    this.name = options.name ?? 'openai-chat';
    this.options = options;
  }

  identity(model?: string): EngineIdentity {
    return { engine: this.name, model: this.modelOf(model), version: 'openai-compatible' };
  }

  async segmentPage(
    image: MediaInput,
    ctx: CallContext,
  ): Promise<{ lines: LineBox[]; cost: CallCost }> {
    const segmenter = this.options.fallbackSegmenter;
    if (!segmenter) {
      throw new ProviderError(
        'invalid',
        `${this.name}: cannot find line boxes; configure a fallback segmenter`,
      );
    }
    return segmenter.segmentPage(image, ctx);
  }

  async recognizeLine(
    image: MediaInput,
    line: LineBox,
    ctx: CallContext,
  ): Promise<{ text: string; confidence?: number; cost: CallCost }> {
    const { box } = line;
    let data: Buffer;
    let mediaType: string;
    let instruction: string;
    const language = ctx.language || 'und';
    if (this.options.cropLine) {
      ({ data, mediaType } = await this.options.cropLine(image, box));
      instruction =
        `Transcribe the single line of text in this image exactly as written (language: ${language}). ` +
        'Answer with the transcription only, on one line, without quotes or commentary.';
    } else {
      ({ data, mediaType } = await this.readImage(image));
      instruction =
        `Transcribe exactly the single line of text inside the box x=${Math.round(box.x)}, y=${Math.round(box.y)}, ` +
        `width=${Math.round(box.w)}, height=${Math.round(box.h)} (pixels from the top-left corner) of this page image ` +
        `(language: ${language}). Answer with the transcription of that line only, on one line, ` +
        'without quotes or commentary.';
    }
    const messages: ChatMessage[] = [
      {
        role: 'system',
        content: 'You are a careful transcriber of manuscripts and printed documents.',
      },
      {
        role: 'user',
        content: [
          { type: 'text', text: instruction },
          {
            type: 'image_url',
            image_url: { url: `data:${mediaType};base64,${data.toString('base64')}` },
          },
        ],
      },
    ];
    const { content, cost } = await this.complete(messages, ctx);
    return { text: content.replace(/\s*\n\s*/g, ' ').trim(), cost };
  }

  async polish(
    text: string,
    kind: MediaKind,
    ctx: CallContext,
  ): Promise<{ text: string; cost: CallCost }> {
    if (text.trim() === '') return { text, cost: { units: 0, unit: 'call' } };
    // Trailing empty lines are kept aside: models drop them, and they carry no text.
    const trailing = /\n*$/.exec(text)![0];
    const body = text.slice(0, text.length - trailing.length);
    const lines = body.split('\n');
    const what =
      kind === 'image' ? 'lines of a transcribed page' : 'segments of a transcribed recording';
    const messages: ChatMessage[] = [
      {
        role: 'system',
        content:
          `You correct ${what} (language: ${ctx.language || 'und'}): fix recognition errors, spelling and ` +
          'punctuation without changing the meaning. Return exactly the same number of lines as given, ' +
          'one corrected line for each input line, in the same order, and nothing else. ' +
          // V8: a line is what its line of the page says; joining is the reading text's job.
          'Never move a word or part of a word from one line to another: a word hyphenated at the ' +
          'end of a line stays split, its hyphen kept.',
      },
      { role: 'user', content: body },
    ];
    const { content, cost } = await this.complete(messages, ctx);
    const corrected = stripFence(content).split('\n');
    if (corrected.length !== lines.length) {
      throw unexpectedShape(
        this.name,
        `polish returned ${corrected.length} lines for ${lines.length}`,
      );
    }
    return { text: corrected.map((l) => l.trimEnd()).join('\n') + trailing, cost };
  }

  private modelOf(model?: string): string {
    return model && model !== 'default' ? model : this.options.model;
  }

  private async readImage(image: MediaInput): Promise<{ data: Buffer; mediaType: string }> {
    const mediaType = image.mediaType.split(';')[0]!.trim().toLowerCase();
    if (!IMAGE_TYPES.has(mediaType)) {
      throw new ProviderError(
        'image',
        `${this.name}: image type ${mediaType || 'unknown'} is not accepted`,
      );
    }
    const max = this.options.maxImageBytes ?? 20 * 1024 * 1024;
    try {
      const info = await stat(image.path);
      if (info.size > max)
        throw new ProviderError('image', `${this.name}: image larger than ${max} bytes`);
      return { data: await readFile(image.path), mediaType };
    } catch (error) {
      if (error instanceof ProviderError) throw error;
      const code = (error as NodeJS.ErrnoException).code ?? 'EIO';
      throw new ProviderError('internal', `${this.name}: image file could not be read (${code})`);
    }
  }

  private async complete(
    messages: ChatMessage[],
    ctx: CallContext,
  ): Promise<{ content: string; cost: CallCost }> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.options.apiKey) headers.authorization = `Bearer ${this.options.apiKey}`;
    const { json } = await providerJson({
      provider: this.name,
      url: joinUrl(this.options.baseUrl, '/v1/chat/completions'),
      method: 'POST',
      headers,
      body: JSON.stringify({ model: this.modelOf(ctx.model), messages, temperature: 0 }),
      signal: ctx.signal,
      timeoutMs: this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      fetchImpl: this.options.fetchImpl,
      secrets: this.options.apiKey ? [this.options.apiKey] : [],
    });
    const choice = (json as { choices?: unknown }).choices;
    const first = Array.isArray(choice)
      ? (choice[0] as { message?: { content?: unknown } } | undefined)
      : undefined;
    const content = contentText(first?.message?.content);
    if (content === undefined) throw unexpectedShape(this.name, 'no choices[0].message.content');
    const tokens = (json as { usage?: { total_tokens?: unknown } }).usage?.total_tokens;
    const cost: CallCost =
      typeof tokens === 'number' && Number.isFinite(tokens) && tokens >= 0
        ? { units: tokens, unit: 'token' }
        : { units: 1, unit: 'call' };
    return { content, cost };
  }
}

/** Message content as text: a string, or the text parts of a content array. */
function contentText(content: unknown): string | undefined {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    const parts = content
      .map((part) => (part as { type?: unknown; text?: unknown }) ?? {})
      .filter((part) => part.type === 'text' && typeof part.text === 'string')
      .map((part) => part.text as string);
    return parts.length > 0 ? parts.join('') : undefined;
  }
  return undefined;
}

/** Some models wrap their answer in a Markdown code fence despite being asked not to. */
function stripFence(content: string): string {
  const fenced = /^\s*```[a-z]*\n([\s\S]*?)\n```\s*$/.exec(content);
  return (fenced ? fenced[1]! : content).replace(/\n+$/, '');
}
