// Where a search query matches a text, and the text with those matches in <mark>s, built from
// text nodes (never HTML: the text is a user's or a model's). The library searches and cuts the
// snippet, but says nothing about where in it the words are; this finds them again the way the
// library's tokeniser reads text (src/core/search.rs), so that what is marked is what matched:
// - words are runs of letters and digits, lower-cased, with the diacritics of Latin letters and
//   Greek's tonos and dialytika folded (café, CAFÉ and cafe are one word, Αθήνα and αθηνα too); an
//   accent written as a separate combining mark belongs to its letter, and so do the vowel marks
//   of Arabic and Hebrew (شكراً is شكرا); full-width letters and digits are ASCII (ＯｐｅｎＡＩ is
//   openai), Arabic-Indic digits too, and Arabic letter variants are one letter (أحمد is احمد);
//   every Latin letter Unicode decomposes is its letter (Kṛṣṇa is krsna); a Cyrillic letter and
//   the mark NFC writes it with are that letter (и and U+0306 is й);
// - Chinese, Japanese and Korean, and Thai, Lao, Khmer and Burmese, are read as pairs of
//   neighbouring characters (東京の → 東京, 京の), and one character of them is found in the pairs
//   it starts or ends (猫 in 一只猫); half-width katakana is full-width (ｶﾀｶﾅ is カタカナ, ﾃﾞｰﾀ
//   is データ), and so is a kana with its combining sound mark (text in NFD: は and U+3099 is ば),
//   and Hangul jamo make their syllable (ᄒ, ᅡ, ᆫ is 한); a name's middle dot is left out
//   (ジョン・スミス is ジョンスミス), and a variation selector or a combining accent belongs to
//   its character;
// - full-width signs and the enclosed and squared letters and units of Chinese and Japanese are no
//   letters (￥5000 holds the number 5000);
// - the punctuation of other scripts ends a word (हूँ। → हूँ); a soft hyphen or a zero-width
//   (non-)joiner does not;
// - a query's words must each match a whole word, `word*` the start of one (only that start is
//   marked), `"several words"` those words in a row.
// Folding is done one character at a time, so every folded word keeps, for each of its
// characters, where it is in the original text: a fold can change the length (NFD, ß → ss),
// and the marks land on the original characters all the same.

/** The scripts written without spaces, read as character pairs: Chinese, Japanese (with the
 * iteration marks 々 〻, 〆 and 〇) and Korean;
 * Thai, Lao, Khmer and Burmese (their vowel signs and tone marks count as characters; the
 * punctuation and currency signs of their blocks split). */
function isUnspaced(n) {
  return (
    (n >= 0x0e01 && n <= 0x0e2e) ||
    (n >= 0x0e30 && n <= 0x0e3a) ||
    (n >= 0x0e40 && n <= 0x0e4e) ||
    (n >= 0x0e50 && n <= 0x0e59) ||
    (n >= 0x0e81 && n <= 0x0eae) ||
    (n >= 0x0eb0 && n <= 0x0edf) ||
    (n >= 0x1780 && n <= 0x17d3) ||
    n === 0x17d7 ||
    (n >= 0x17dc && n <= 0x17ff) ||
    (n >= 0x1000 && n <= 0x1049) ||
    (n >= 0x1050 && n <= 0x109f) ||
    (n >= 0xa9e0 && n <= 0xa9ff) ||
    (n >= 0xaa60 && n <= 0xaa7f) ||
    (n >= 0x3040 && n <= 0x309f) ||
    (n >= 0x30a1 && n <= 0x30fa) ||
    (n >= 0x30fc && n <= 0x30ff) ||
    (n >= 0x3005 && n <= 0x3007) ||
    n === 0x303b ||
    (n >= 0x31f0 && n <= 0x31ff) ||
    (n >= 0x3400 && n <= 0x4dbf) ||
    (n >= 0x4e00 && n <= 0x9fff) ||
    (n >= 0xf900 && n <= 0xfaff) ||
    (n >= 0xac00 && n <= 0xd7af) ||
    (n >= 0x1100 && n <= 0x11ff) ||
    (n >= 0x3130 && n <= 0x318f) ||
    (n >= 0xff66 && n <= 0xff9d) ||
    (n >= 0x20000 && n <= 0x2fa1f)
  );
}

/** A variation selector: the glyph variant of the character before it, which it belongs to. */
const isVariationSelector = (n) => (n >= 0xfe00 && n <= 0xfe0f) || (n >= 0xe0100 && n <= 0xe01ef);

/** Whether `chars[k]` is a middle dot between two characters of a script written without spaces
 * (a name's: ジョン・スミス, 约翰·史密斯): left out, the run goes on. `afterRun`: whether a run's
 * character ends right before it (with what belongs to it: the sound mark of ﾌﾞﾗｯﾄﾞ･ﾋﾟｯﾄ). */
const joinsRun = (chars, k, afterRun) =>
  afterRun && [0xb7, 0x30fb, 0xff65].includes(chars[k].codePointAt(0)) && k + 1 < chars.length && isUnspaced(chars[k + 1].codePointAt(0));

/** Combining marks (an accent written apart from its letter), the vowel points of Hebrew and the
 * vowel and Quranic marks of Arabic, and the soft hyphen, zero-width (non-)joiner, Arabic tatweel
 * and Arabic letter mark: part of the word, never of its term. */
const isMark = (n) => [0xad, 0x200c, 0x200d, 0x640, 0x61c].includes(n) || isCombining(n);

/** The combining marks of `isMark`, which after a character of a run belong to it. */
function isCombining(n) {
  return (
    (n >= 0x08d3 && n <= 0x08e1) ||
    (n >= 0x08e3 && n <= 0x08ff) ||
    (n >= 0x0591 && n <= 0x05bd) ||
    [0x5bf, 0x5c1, 0x5c2, 0x5c4, 0x5c5, 0x5c7, 0x670, 0x6e7, 0x6e8].includes(n) ||
    (n >= 0x0610 && n <= 0x061a) ||
    (n >= 0x064b && n <= 0x065f) ||
    (n >= 0x06d6 && n <= 0x06dc) ||
    (n >= 0x06df && n <= 0x06e4) ||
    (n >= 0x06ea && n <= 0x06ed) ||
    (n >= 0x0300 && n <= 0x036f) ||
    (n >= 0x1ab0 && n <= 0x1aff) ||
    (n >= 0x1dc0 && n <= 0x1dff) ||
    (n >= 0x20d0 && n <= 0x20ff) ||
    (n >= 0xfe20 && n <= 0xfe2f)
  );
}

const LATIN_1_WORD = new Set([0xaa, 0xb2, 0xb3, 0xb5, 0xb9, 0xba, 0xbc, 0xbd, 0xbe]);
const NOT_WORD_BLOCKS = [
  // The sentence and clause marks of Greek, Armenian, Hebrew, Arabic, the Indic scripts and
  // Ethiopic, inside their letters' blocks.
  [0x037e, 0x037e],
  [0x0387, 0x0387],
  [0x055a, 0x055f],
  [0x0589, 0x058a],
  [0x05be, 0x05be],
  [0x05c3, 0x05c3],
  [0x060c, 0x060c],
  [0x061b, 0x061b],
  [0x061f, 0x061f],
  [0x066a, 0x066d],
  [0x06d4, 0x06d4],
  [0x0964, 0x0965],
  [0x0970, 0x0970],
  [0x1361, 0x1368],
  // Punctuation and currency signs inside the blocks of Thai, Lao, Khmer and Burmese.
  [0x0e2f, 0x0e2f],
  [0x0e3f, 0x0e3f],
  [0x0e4f, 0x0e4f],
  [0x0e5a, 0x0e5b],
  [0x0eaf, 0x0eaf],
  [0x17d4, 0x17d6],
  [0x17d8, 0x17db],
  [0x104a, 0x104b],
  // Japanese ゠ and ・, the enclosed and squared letters and units of Chinese and Japanese, the
  // full-width signs (￥5000 is the number 5000), and U+FEFF.
  [0x30a0, 0x30a0],
  [0x30fb, 0x30fb],
  [0x3200, 0x33ff],
  [0xffe0, 0xffee],
  [0xfeff, 0xfeff],
  [0x2000, 0x2bff],
  [0x2e00, 0x2e7f],
  [0x3000, 0x303f],
  [0xe000, 0xf8ff],
  [0xfe00, 0xfe6f],
  [0xff00, 0xff0f],
  [0xff1a, 0xff20],
  [0xff3b, 0xff40],
  [0xff5b, 0xff65],
  [0xfff0, 0xffff],
  [0x1f000, 0x1faff],
  [0xe0000, 0xe007f],
];
const SPACE = /^\p{White_Space}$/u;

/** Whether a character belongs in a word: letters and digits of every script, not punctuation,
 * symbols, emoji or spaces (told apart by their blocks, as the library does). */
function isWord(c, n) {
  if (n <= 0x7f) return (n >= 0x30 && n <= 0x39) || (n >= 0x41 && n <= 0x5a) || (n >= 0x61 && n <= 0x7a);
  if (n <= 0xbf) return LATIN_1_WORD.has(n);
  if (n === 0xd7 || n === 0xf7) return false;
  if (NOT_WORD_BLOCKS.some(([lo, hi]) => n >= lo && n <= hi)) return false;
  return !SPACE.test(c);
}

/** The Latin letters whose diacritic is not a separate mark in NFD, the ligatures and the
 * letters written as two, long s, and the Arabic letter variants (a letter with hamza or madda,
 * alef maksura and Persian yeh, teh marbuta, Persian keheh). */
const SPECIAL = { ς: 'σ', ß: 'ss', æ: 'ae', œ: 'oe', þ: 'th', ð: 'd', ø: 'o', đ: 'd', ħ: 'h', ı: 'i', ł: 'l', ŀ: 'l', ŧ: 't', ſ: 's', أ: 'ا', إ: 'ا', آ: 'ا', ٱ: 'ا', ى: 'ي', ی: 'ي', ئ: 'ي', ة: 'ه', ۀ: 'ه', ک: 'ك', ؤ: 'و', ۂ: 'ہ', ۓ: 'ے' };

/** One character as it counts in a term: lower case, a Latin or Greek letter without its
 * diacritics (lower case, NFD, combining marks removed), full-width forms and the letters above
 * as they are given there (after NFD: ǽ is æ, so ae). Letters of other scripts keep their marks,
 * as in the library. */
export function foldChar(c) {
  const n = c.codePointAt(0);
  // Full-width Latin letters and digits, and Arabic-Indic digits: ASCII.
  if ((n >= 0xff10 && n <= 0xff19) || (n >= 0xff21 && n <= 0xff3a) || (n >= 0xff41 && n <= 0xff5a)) return String.fromCharCode(n - 0xfee0).toLowerCase();
  if (n >= 0x660 && n <= 0x669) return String(n - 0x660);
  if (n >= 0x6f0 && n <= 0x6f9) return String(n - 0x6f0);
  let lower = c.toLowerCase();
  if (n < 0x250 || (n >= 0x1e00 && n <= 0x1eff) || (n >= 0x386 && n <= 0x3ce)) lower = lower.normalize('NFD').replace(/\p{M}/gu, '');
  return [...lower].map((ch) => SPECIAL[ch] ?? ch).join('');
}

/** The full-width katakana each half-width one (U+FF66 to U+FF9D) stands for, in order. */
const HALF_WIDTH_KATAKANA = 'ヲァィゥェォャュョッーアイウエオカキクケコサシスセソタチツテトナニヌネノハヒフヘホマミムメモヤユヨラリルレロワン';

/** The tokens of `text`, in order: `{ term, start, end, ends }`, `start` and `end` offsets in
 * `text` (UTF-16, end excluded) and `ends[i]` the offset in `text` where the first `i + 1`
 * characters of `term` are all covered (used to mark only the start of a word). */
export function tokenize(text) {
  const tokens = [];
  let word = null;
  let cjk = [];
  const flushWord = () => {
    if (word && word.term) tokens.push(word);
    word = null;
  };
  // (`ends` has an entry per UTF-16 unit of the term: a character past U+FFFF, CJK Extension
  // B's, is two.)
  const unitsEnd = (c, end) => Array(c.length).fill(end);
  const flushCjk = () => {
    if (cjk.length === 1) {
      const [{ c, at, end }] = cjk;
      tokens.push({ term: c, start: at, end, ends: unitsEnd(c, end) });
    }
    for (let i = 0; i + 1 < cjk.length; i++) {
      const [a, b] = [cjk[i], cjk[i + 1]];
      tokens.push({ term: a.c + b.c, start: a.at, end: b.end, ends: [...unitsEnd(a.c, a.end), ...unitsEnd(b.c, b.end)] });
    }
    cjk = [];
  };
  let at = 0;
  const chars = [...text];
  for (const [k, c] of chars.entries()) {
    const n = c.codePointAt(0);
    const end = at + c.length;
    const last = cjk[cjk.length - 1];
    // A variation selector, and a combining mark after a character of a run, belong to the
    // character before them: a kana's sound mark in NFD is one character with it where NFC has
    // one (は and U+3099 is ば). A sound mark elsewhere is dropped, as a word's marks are.
    const afterRun = last?.end === at;
    if (isVariationSelector(n) || n === 0x3099 || n === 0x309a || (afterRun && isCombining(n))) {
      if (afterRun) {
        const composed = n === 0x3099 || n === 0x309a ? (last.c + c).normalize('NFC') : '';
        // (A half-width sound mark after it is no longer right after the half-width kana.)
        Object.assign(last, composed.length === 1 ? { c: composed, end, half: false } : { end, half: false });
      } else if (word) word.end = end;
      at = end;
      continue;
    }
    // A Hangul vowel or final consonant after the jamo or syllable it makes a syllable with
    // (text in NFD writes 한 as ᄒ, ᅡ, ᆫ) is one character with it, as NFC composes them.
    const syllable = afterRun && ((n >= 0x1161 && n <= 0x1175) || (n >= 0x11a8 && n <= 0x11c2)) ? (last.c + c).normalize('NFC') : '';
    if (syllable.length === 1) {
      Object.assign(last, { c: syllable, end, half: false });
      at = end;
      continue;
    }
    if (joinsRun(chars, k, afterRun)) {
      // A name's middle dot is left out.
      at = end;
      continue;
    }
    // A half-width sound mark right after a half-width kana is one character with it (ｶﾞ is ガ).
    const voiced = last?.half && last.end === at && (n === 0xff9e || n === 0xff9f) ? (last.c + c).normalize('NFKC') : '';
    if (voiced.length === 1) {
      Object.assign(last, { c: voiced, end, half: false });
    } else if (isUnspaced(n)) {
      flushWord();
      // Half-width katakana is its full-width form.
      const half = n >= 0xff66 && n <= 0xff9d;
      cjk.push({ c: half ? HALF_WIDTH_KATAKANA[n - 0xff66] : c, at, end, half });
    } else {
      flushCjk();
      if (isMark(n)) {
        // An accent written apart belongs to its letter: the word goes on, its term does not grow.
        // A Cyrillic letter and its mark that NFC writes as one letter are that letter (и and
        // U+0306 is й).
        const base = word?.term.at(-1) ?? '';
        const composed = base >= '\u0400' && base <= '\u052f' ? (base + c).normalize('NFC') : '';
        if (composed.length === 1) {
          word.term = word.term.slice(0, -1) + composed;
          word.ends[word.ends.length - 1] = end;
        }
        if (word) word.end = end;
      } else if (isWord(c, n)) {
        word ??= { term: '', start: at, end, ends: [] };
        const folded = foldChar(c);
        word.term += folded;
        word.end = end;
        // Every character of the fold is covered once this original character is.
        for (let i = 0; i < folded.length; i++) word.ends.push(end);
      } else {
        flushWord();
      }
    }
    at = end;
  }
  flushWord();
  flushCjk();
  return tokens;
}

/** A query as the library reads it: `[{ kind: 'term' | 'prefix', term, lone }` or `{ kind:
 * 'phrase', terms }]`. Words are all required; `"…"` is a phrase (`＂…＂`, `“…”`, `„…“` and `«…»` too);
 * `word*` a prefix (`word＊` too); a word that is several tokens (`e-mail`, `東京の`) a phrase of
 * them, unless it ends in `*` or holds one character of a script written without spaces
 * (`gpt-4*`, `3月`): then each token is a clause of its own, the last a prefix with `*`; one
 * such character (`lone`) is the prefix of its pairs, and found in those it ends. */
export function parseQuery(query) {
  const clauses = [];
  const single = (term, prefix) => {
    const chars = [...term];
    const loneCjk = chars.length === 1 && isUnspaced(chars[0].codePointAt(0));
    // (`lone`: also found where it ends a pair.)
    return { kind: prefix || loneCjk ? 'prefix' : 'term', term, lone: loneCjk };
  };
  const add = (terms, prefix) => {
    if (terms.length === 0) return;
    if (terms.length === 1) clauses.push(single(terms[0], prefix));
    else if (prefix || terms.some((t) => single(t, false).lone)) terms.forEach((t, i) => clauses.push(single(t, prefix && i === terms.length - 1)));
    else clauses.push({ kind: 'phrase', terms });
  };
  const terms = (text) => tokenize(text).map((t) => t.term);
  String(query)
    .replace(/[＂“”„‟«»]/g, '"')
    .replace(/＊/g, '*')
    .split('"')
    .forEach((part, i) => {
      // Odd parts are inside quotes (an unclosed quote runs to the end).
      if (i % 2 === 1) add(terms(part), false);
      else for (const word of part.split(/\p{White_Space}+/u)) if (word) add(terms(word), word.endsWith('*'));
    });
  return clauses;
}

/** Where `clauses` match `text`: sorted `[start, end]` offsets, overlapping ones merged. */
export function matchRanges(text, clauses) {
  if (!clauses.length) return [];
  const tokens = tokenize(text);
  const ranges = [];
  for (const clause of clauses) {
    tokens.forEach((token, i) => {
      if (clause.kind === 'term') {
        if (token.term === clause.term) ranges.push([token.start, token.end]);
      } else if (clause.kind === 'prefix') {
        // One character of a script written without spaces, where it ends a pair: that character.
        if (clause.lone && token.term.length > clause.term.length && token.term.endsWith(clause.term)) {
          ranges.push([token.ends[0], token.end]);
          return;
        }
        if (!clause.term || !token.term.startsWith(clause.term)) return;
        // The start of the word that the prefix covers, with any accent written apart after it.
        let end = token.ends[clause.term.length - 1];
        while (end < token.end && isMark(text.charCodeAt(end))) end++;
        ranges.push([token.start, end]);
      } else {
        const run = tokens.slice(i, i + clause.terms.length);
        if (run.length === clause.terms.length && run.every((t, k) => t.term === clause.terms[k])) {
          ranges.push([run[0].start, run.at(-1).end]);
        }
      }
    });
  }
  ranges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const merged = [];
  for (const r of ranges) {
    const last = merged.at(-1);
    if (last && r[0] <= last[1]) last[1] = Math.max(last[1], r[1]);
    else merged.push([...r]);
  }
  return merged;
}

/** A `<mark>` holding `text` (as text). */
function markOf(text) {
  const mark = document.createElement('mark');
  mark.textContent = text;
  return mark;
}

/** `text` with `ranges` in <mark>s, as a DocumentFragment of text nodes and marks. */
function marked(text, ranges) {
  const fragment = document.createDocumentFragment();
  let at = 0;
  for (const [start, end] of ranges) {
    if (start > at) fragment.append(document.createTextNode(text.slice(at, start)));
    fragment.append(markOf(text.slice(start, end)));
    at = end;
  }
  if (at < text.length) fragment.append(document.createTextNode(text.slice(at)));
  return fragment;
}

/** Plain `text` with the matches of `clauses` marked: a DocumentFragment. */
export function highlightText(text, clauses) {
  return marked(text, matchRanges(text, clauses));
}

/** Elements that start a new line: the text on either side is not one word. */
const BREAKS = new Set(['BR', 'HR', 'P', 'DIV', 'LI', 'UL', 'OL', 'PRE', 'BLOCKQUOTE', 'TABLE', 'TR', 'TD', 'TH', 'H1', 'H2', 'H3', 'H4', 'H5', 'H6']);

/** Marks the matches of `clauses` in the text of `root` (plain text, or the sanitised Markdown of
 * an answer), in place: its text is read as one (so a word split by <strong> still matches, and
 * a match may span elements: each text node gets its part), with a line break where a block or
 * <br> starts. Returns the marks made, in order. */
export function highlightElement(root, clauses) {
  const parts = [];
  let text = '';
  let broken = false;
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.nodeType === Node.ELEMENT_NODE) {
      if (BREAKS.has(node.tagName)) broken = true;
      continue;
    }
    if (broken && text) text += '\n';
    broken = false;
    parts.push({ node, start: text.length, end: text.length + node.data.length });
    text += node.data;
  }
  const ranges = matchRanges(text, clauses);
  const marks = [];
  if (!ranges.length) return marks;
  for (const { node, start, end } of parts) {
    const local = ranges
      .filter(([a, b]) => a < end && b > start)
      .map(([a, b]) => [Math.max(a, start) - start, Math.min(b, end) - start]);
    if (!local.length) continue;
    const fragment = marked(node.data, local);
    marks.push(...fragment.querySelectorAll('mark'));
    node.replaceWith(fragment);
  }
  return marks;
}
