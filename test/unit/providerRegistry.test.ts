import { describe, expect, it } from 'vitest';
import { ProviderError } from '../../core/failures';
import { MediaKindRefusedError } from '../../core/provider';
import { OpenAiAudioProvider } from '../../providers/openaiAudio';
import { OpenAiChatProvider } from '../../providers/openaiChat';
import { createProviderRegistry } from '../../providers/registry';
import { SimulatedProvider } from '../../providers/simulated';

/** Q1: the registry hands out the engine of the kind asked, and refuses the other kind once. */
const chat = new OpenAiChatProvider({ baseUrl: 'http://127.0.0.1:9', model: 'm' });
const whisper = new OpenAiAudioProvider({ baseUrl: 'http://127.0.0.1:9' });

function refusal(take: () => unknown): unknown {
  try {
    take();
  } catch (error) {
    return error;
  }
  throw new Error('expected a refusal');
}

describe('provider registry (Q1)', () => {
  it('Q1 an engine is handed out for the kinds it reads, both for one that reads both', () => {
    const simulated = new SimulatedProvider();
    const registry = createProviderRegistry([chat, whisper, simulated]);
    expect(registry.imageEngine('openai-chat')).toBe(chat);
    expect(registry.audioEngine('whisper')).toBe(whisper);
    expect(registry.imageEngine('simulated')).toBe(simulated);
    expect(registry.audioEngine('simulated')).toBe(simulated);
    expect(registry.get('whisper')).toBe(whisper);
  });

  it('Q1 a kind the engine does not read is refused invalid, before any call, in one spelling', () => {
    const registry = createProviderRegistry([chat, whisper]);
    const audio = refusal(() => registry.audioEngine('openai-chat'));
    const image = refusal(() => registry.imageEngine('whisper'));
    expect(audio).toBeInstanceOf(MediaKindRefusedError);
    expect(audio).toMatchObject({ category: 'invalid', kind: 'audio', provider: 'openai-chat' });
    expect((audio as Error).message).toBe('this provider does not transcribe audio');
    expect(image).toMatchObject({ category: 'invalid', kind: 'image', provider: 'whisper' });
    expect((image as Error).message).toBe('this provider does not transcribe images');
  });

  it('Q1 a catalogued name reads what the catalogue says; another name what its engine implements', () => {
    const registry = createProviderRegistry([
      new SimulatedProvider({}, 'tesseract'),
      new SimulatedProvider({}, 'polisher'),
    ]);
    expect(refusal(() => registry.audioEngine('tesseract'))).toBeInstanceOf(MediaKindRefusedError);
    expect(registry.imageEngine('tesseract').name).toBe('tesseract');
    expect(registry.audioEngine('polisher').name).toBe('polisher');
  });

  it('Q3 J3 a provider the worker did not register is our fault (not a refusal of the job)', () => {
    const registry = createProviderRegistry([chat]);
    for (const take of [() => registry.imageEngine('nope'), () => registry.audioEngine('nope')]) {
      const error = refusal(take);
      expect(error).not.toBeInstanceOf(ProviderError);
      expect((error as Error).message).toMatch(/not registered on this worker/);
    }
  });
});
