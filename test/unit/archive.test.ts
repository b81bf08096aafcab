import { describe, expect, it } from 'vitest';
import {
  DUBLIN_CORE_ELEMENTS,
  GT_STANDIN,
  LT_STANDIN,
  MARK_START,
  MARK_STOP,
  parseMarkedSnippet,
  SEARCH_CONFIG_NAMES,
  searchConfigFor,
  snippetParts,
} from '../../core/archive';
import { buildCollection, collectionUriFor } from '../../core/interchange/collection';

describe('F3 snippets and language-aware matching', () => {
  it('F3 a marked headline becomes text and UTF-16 offsets of the matched words, brackets given back', () => {
    const marked = `Zeile ${MARK_START}Straße${MARK_STOP} und ${LT_STANDIN}${MARK_START}Haus${MARK_STOP}${GT_STANDIN} 😀 ${MARK_START}Hof${MARK_STOP}`;
    const snippet = parseMarkedSnippet(marked);
    expect(snippet.text).toBe('Zeile Straße und <Haus> 😀 Hof');
    expect(snippet.highlights.map((h) => snippet.text.slice(h.start, h.start + h.length))).toEqual([
      'Straße',
      'Haus',
      'Hof',
    ]);
    expect(snippetParts(snippet)).toEqual([
      { text: 'Zeile ', marked: false },
      { text: 'Straße', marked: true },
      { text: ' und <', marked: false },
      { text: 'Haus', marked: true },
      { text: '> 😀 ', marked: false },
      { text: 'Hof', marked: true },
    ]);
  });

  it('F3 an unclosed or empty mark marks nothing', () => {
    expect(parseMarkedSnippet(`a ${MARK_START}${MARK_STOP}b ${MARK_START}c`)).toEqual({
      text: 'a b c',
      highlights: [],
    });
  });

  it("F3 an item's language picks PostgreSQL's stemming configuration; unknown or none is simple", () => {
    expect(searchConfigFor('en')).toBe('english');
    expect(searchConfigFor('de-DE')).toBe('german');
    expect(searchConfigFor('nb')).toBe('norwegian');
    expect(searchConfigFor('la')).toBe('simple');
    expect(searchConfigFor(null)).toBe('simple');
    expect(SEARCH_CONFIG_NAMES).toContain('simple');
    expect(new Set(SEARCH_CONFIG_NAMES).size).toBe(SEARCH_CONFIG_NAMES.length);
  });
});

describe('F1 F2 collections and metadata', () => {
  it('F2 the fifteen Dublin Core elements are offered', () => {
    expect(DUBLIN_CORE_ELEMENTS).toHaveLength(15);
    expect(DUBLIN_CORE_ELEMENTS).toContain('Creator');
  });

  it('F1 a IIIF Collection lists sub-collections before item manifests, with partOf its parent', () => {
    const built = buildCollection({
      baseUrl: 'https://q.test/',
      workspaceId: 3,
      id: 9,
      title: 'Box 1',
      description: null,
      metadata: [],
      parentId: 4,
      collections: [{ id: 10, title: 'Folder' }],
      items: [{ id: 'a b', title: null }],
    });
    expect(built.id).toBe(collectionUriFor('https://q.test', 3, 9));
    expect(built.partOf).toEqual([
      { id: 'https://q.test/iiif/3/collection/4', type: 'Collection' },
    ]);
    expect(built.items).toEqual([
      {
        id: 'https://q.test/iiif/3/collection/10',
        type: 'Collection',
        label: { none: ['Folder'] },
      },
      { id: 'https://q.test/iiif/3/a%20b/manifest', type: 'Manifest', label: { none: ['a b'] } },
    ]);
    expect('summary' in built).toBe(false);
  });
});
