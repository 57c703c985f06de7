//! Full-text search as data: the tokeniser that turns text into index terms, the query language,
//! and the ranking (BM25, recency breaking ties) with the snippet around a hit. The backend keeps
//! each item's terms in its row, so an IndexedDB index finds the items that hold a term; this
//! module decides what a term is and which of those items match, and how well.

use super::error::{Result, SessionError, SessionErrorCode};

/// The longest query, in characters.
pub const MAX_QUERY: usize = 1000;
/// The most distinct terms one item is indexed under (a huge paste indexes its first ones, and
/// [`PARTIAL`]).
pub const MAX_TERMS_PER_ITEM: usize = 2000;
/// The term of an item indexed under its first [`MAX_TERMS_PER_ITEM`] terms only: a search checks
/// the text of its user's such items whatever the query (never a term of a text: a control
/// character is no word character).
pub const PARTIAL: &str = "\u{1}";
/// About how long a snippet is, in characters.
pub const SNIPPET: usize = 160;

/// One token of a text: its term, its place among the text's tokens, and where it is in the text
/// (character offsets, end excluded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub term: String,
    pub position: u32,
    pub start: usize,
    pub end: usize,
}

/// The scripts written without spaces between words, indexed as pairs of neighbouring characters:
/// Chinese, Japanese and Korean; Thai, Lao, Khmer and Burmese (their vowel signs and tone marks
/// are characters of the pairs, as typed). The punctuation and currency signs of those blocks
/// (Thai ฯ ฿ ๏ ๚ ๛, Lao ຯ, Khmer ។ ៕ ៛ and the rest) split, as punctuation does elsewhere, and
/// so do Japanese ゠ and the middle dot ・ (which a run goes on across, see [`joins_run`]).
fn is_unspaced(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x309F | 0x30A1..=0x30FA | 0x30FC..=0x30FF // Hiragana, Katakana
        | 0x3005..=0x3007 | 0x303B // the iteration marks 々 〻, 〆, the numeral 〇
        | 0x31F0..=0x31FF   // Katakana extensions
        | 0x3400..=0x4DBF   // CJK extension A
        | 0x4E00..=0x9FFF   // CJK unified ideographs
        | 0xF900..=0xFAFF   // CJK compatibility ideographs
        | 0xAC00..=0xD7AF   // Hangul syllables
        | 0x1100..=0x11FF   // Hangul jamo
        | 0x3130..=0x318F   // Hangul compatibility jamo
        | 0xFF66..=0xFF9D   // half-width Katakana
        | 0x20000..=0x2FA1F // CJK extensions B and later
        | 0x0E01..=0x0E2E | 0x0E30..=0x0E3A | 0x0E40..=0x0E4E | 0x0E50..=0x0E59 // Thai
        | 0x0E81..=0x0EAE | 0x0EB0..=0x0EDF                   // Lao
        | 0x1780..=0x17D3 | 0x17D7 | 0x17DC..=0x17FF // Khmer
        | 0x1000..=0x1049 | 0x1050..=0x109F | 0xA9E0..=0xA9FF | 0xAA60..=0xAA7F // Burmese
    )
}

/// Combining marks (accents written as a separate character), and the vowel points and
/// cantillation of Hebrew and the vowel marks (harakat) and Quranic marks of Arabic, which are
/// written over or under their letter and mostly left out: dropped (`שָׁלוֹם` is `שלום`, `شكراً`
/// is `شكرا`).
fn is_mark(c: char) -> bool {
    matches!(c as u32,
        0x0300..=0x036F | 0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF | 0x20D0..=0x20FF | 0xFE20..=0xFE2F
        | 0x0591..=0x05BD | 0x05BF | 0x05C1 | 0x05C2 | 0x05C4 | 0x05C5 | 0x05C7
        | 0x0610..=0x061A | 0x064B..=0x065F | 0x0670 | 0x06D6..=0x06DC | 0x06DF..=0x06E4
        | 0x06E7 | 0x06E8 | 0x06EA..=0x06ED | 0x08D3..=0x08E1 | 0x08E3..=0x08FF
    )
}

/// A variation selector: the glyph variant of the character before it (an ideograph's regional
/// form, `葛󠄀`; an emoji's presentation). It belongs to that character: dropped, its word or run
/// goes on.
fn is_variation_selector(c: char) -> bool {
    matches!(c as u32, 0xFE00..=0xFE0F | 0xE0100..=0xE01EF)
}

/// Whether `chars[i]` is a middle dot between two characters of a script written without spaces:
/// the dot between the words of a name (`ジョン・スミス`, `约翰·史密斯`), dropped so that the run
/// goes on (`ジョンスミス` finds it, and so do `ジョン` and `スミス`). `after_run`: whether a run's
/// character ends right before it (with what belongs to it: the half-width sound mark of
/// `ﾌﾞﾗｯﾄﾞ･ﾋﾟｯﾄ`, a variation selector).
fn joins_run(chars: &[char], i: usize, after_run: bool) -> bool {
    after_run
        && matches!(chars[i], '\u{B7}' | '\u{30FB}' | '\u{FF65}')
        && chars.get(i + 1).copied().is_some_and(is_unspaced)
}

/// The Hangul syllable a conjoining jamo after `before` makes with it, as NFC composes them (text
/// in NFD writes `한` as `ᄒ`, `ᅡ`, `ᆫ`): a leading consonant and a vowel, or a syllable without
/// a final consonant and one. (Also across a variation selector or mark between them, which
/// belongs to the run's character, where NFC leaves them apart.)
fn hangul(before: char, jamo: char) -> Option<char> {
    let (b, j) = (before as u32, jamo as u32);
    let syllable = match (b, j) {
        (0x1100..=0x1112, 0x1161..=0x1175) => 0xAC00 + ((b - 0x1100) * 21 + (j - 0x1161)) * 28,
        (0xAC00..=0xD7A3, 0x11A8..=0x11C2) if (b - 0xAC00).is_multiple_of(28) => b + j - 0x11A7,
        _ => return None,
    };
    char::from_u32(syllable)
}

/// The Cyrillic letters Unicode writes as a letter and a combining mark, lower case: the letter,
/// the mark and the letter they make, as NFC composes them (`и` and U+0306 is `й`, `е` and U+0308
/// is `ё`), each less U+0400 (the mark less U+0300). Generated from Unicode's decompositions, as
/// the demo's highlighting composes (NFC); also across another mark between them (dropped), where
/// NFC leaves them apart.
const CYRILLIC_MARKED: [[u8; 3]; 26] = [
    [0x35, 0x00, 0x50], // е U+300 ѐ
    [0x35, 0x08, 0x51], // е U+308 ё
    [0x33, 0x01, 0x53], // г U+301 ѓ
    [0x56, 0x08, 0x57], // і U+308 ї
    [0x3A, 0x01, 0x5C], // к U+301 ќ
    [0x38, 0x00, 0x5D], // и U+300 ѝ
    [0x43, 0x06, 0x5E], // у U+306 ў
    [0x38, 0x06, 0x39], // и U+306 й
    [0x75, 0x0F, 0x77], // ѵ U+30F ѷ
    [0x36, 0x06, 0xC2], // ж U+306 ӂ
    [0x30, 0x06, 0xD1], // а U+306 ӑ
    [0x30, 0x08, 0xD3], // а U+308 ӓ
    [0x35, 0x06, 0xD7], // е U+306 ӗ
    [0xD9, 0x08, 0xDB], // ә U+308 ӛ
    [0x36, 0x08, 0xDD], // ж U+308 ӝ
    [0x37, 0x08, 0xDF], // з U+308 ӟ
    [0x38, 0x04, 0xE3], // и U+304 ӣ
    [0x38, 0x08, 0xE5], // и U+308 ӥ
    [0x3E, 0x08, 0xE7], // о U+308 ӧ
    [0xE9, 0x08, 0xEB], // ө U+308 ӫ
    [0x4D, 0x08, 0xED], // э U+308 ӭ
    [0x43, 0x04, 0xEF], // у U+304 ӯ
    [0x43, 0x08, 0xF1], // у U+308 ӱ
    [0x43, 0x0B, 0xF3], // у U+30B ӳ
    [0x47, 0x08, 0xF5], // ч U+308 ӵ
    [0x4B, 0x08, 0xF9], // ы U+308 ӹ
];

/// The Cyrillic letter `base` makes with the combining mark `mark` (see [`CYRILLIC_MARKED`]).
/// U+0340 and U+0341, which NFC writes as U+0300 and U+0301, compose as those.
fn cyrillic_marked(base: char, mark: char) -> Option<char> {
    let (b, m) = (
        (base as u32).wrapping_sub(0x400),
        match mark {
            '\u{340}' | '\u{341}' => mark as u32 - 0x340,
            _ => (mark as u32).wrapping_sub(0x300),
        },
    );
    CYRILLIC_MARKED
        .iter()
        .find(|[x, y, _]| u32::from(*x) == b && u32::from(*y) == m)
        .and_then(|[_, _, letter]| char::from_u32(0x400 + u32::from(*letter)))
}

/// The letter each Latin letter with a diacritic is written with (the first character of its
/// Unicode decomposition, lower case), `.` for the others: Latin-1, Latin Extended-A and -B
/// (U+00C0 to U+024F), then Latin Extended Additional (U+1E00 to U+1EFF: the dots, lines and
/// rings of transliterations, `ṣ`, `ḥ`, `ṛ`, Welsh `ẃ`, Vietnamese). Đ, Ħ, Ł, Ŀ, Ø, Ŧ, Ð and
/// dotless ı, which Unicode does not decompose, are their letter too. Generated from Unicode's
/// decompositions, as the demo's highlighting folds (NFD).
const LATIN: &str = concat!(
    "aaaaaa.ceeeeiiiidnooooo.ouuuuy..aaaaaa.ceeeeiiiidnooooo.ouuuuy.y",
    "aaaaaaccccccccddddeeeeeeeeeegggggggghhhhiiiiiiiiii..jjkk.lllllll",
    "lllnnnnnn...oooooo..rrrrrrssssssssttttttuuuuuuuuuuuuwwyyyzzzzzz.",
    "................................oo.............uu...............",
    ".............aaiioouuuuuuuuuu.aaaa....ggkkoooo..j...gg..nnaa....",
    "aaaaeeeeiiiioooorrrruuuusstt..hh......aaeeooooooooyy............",
    "................",
);
const LATIN_ADDITIONAL: &str = concat!(
    "aabbbbbbccddddddddddeeeeeeeeeeffgghhhhhhhhhhiiiikkkkkkllllllllmm",
    "mmmmnnnnnnnnoooooooopppprrrrrrrrssssssssssttttttttuuuuuuuuuuvvvv",
    "wwwwwwwwwwxxxxyyzzzzzzhtwy......aaaaaaaaaaaaaaaaaaaaaaaaeeeeeeee",
    "eeeeeeeeiiiioooooooooooooooooooooooouuuuuuuuuuuuuuyyyyyyyy......",
);

/// The letter `c` is written with, for a Latin letter with a diacritic (see [`LATIN`]).
fn latin_letter(c: char) -> Option<char> {
    let n = c as u32;
    let letter = match n {
        0xC0..=0x24F => LATIN.as_bytes().get((n - 0xC0) as usize),
        0x1E00..=0x1EFF => LATIN_ADDITIONAL.as_bytes().get((n - 0x1E00) as usize),
        _ => None,
    };
    letter.filter(|b| **b != b'.').map(|b| char::from(*b))
}

/// The capitals of Latin Extended-B that [`lower`] does not compute, each followed by its lower
/// case.
const LATIN_B_CASES: &str = "ƁɓƂƃƄƅƆɔƇƈƉɖƊɗƋƌƎǝƏəƐɛƑƒƓɠƔɣƖɩƗɨƘƙƜɯƝɲƟɵƢƣƤƥƦʀƧƨƩʃƬƭƮʈƱʊƲʋƳƴƵƶƷʒƸƹƼƽǄǆǅǆǇǉǈǉǊǌǋǌǱǳǲǳǴǵǶƕǷƿȠƞȺⱥȻȼȽƚȾⱦɁɂɃƀɄʉɅʌɆɇɈɉɊɋɌɍɎɏ";

/// The full-width katakana each half-width one (U+FF66 to U+FF9D) stands for, in order.
const HALF_WIDTH_KATAKANA: &str =
    "ヲァィゥェォャュョッーアイウエオカキクケコサシスセソタチツテトナニヌネノハヒフヘホマミムメモヤユヨラリルレロワン";

/// Whether `c` is a half-width katakana (U+FF66 to U+FF9D).
fn is_half_width_kana(c: char) -> bool {
    matches!(c as u32, 0xFF66..=0xFF9D)
}

/// A half-width katakana as its full-width form (`ｶ` is `カ`); other characters as they are.
fn full_width_kana(c: char) -> char {
    match c as u32 {
        n @ 0xFF66..=0xFF9D => HALF_WIDTH_KATAKANA
            .chars()
            .nth((n - 0xFF66) as usize)
            .unwrap_or(c),
        _ => c,
    }
}

/// The kana `kana` (hiragana, or the full-width form of a katakana) with the voiced (`゙`) or
/// semi-voiced (`゚`) sound mark `mark` after it, as one character, where there is one: the
/// half-width mark typed after a half-width kana (`ｶﾞ` is `ガ`, `ﾊﾟ` is `パ`), and the combining
/// mark of text in NFD (file names on macOS: `か` and U+3099 is `が`), as NFC composes them.
fn voiced(kana: char, mark: char) -> Option<char> {
    // Hiragana is katakana less 0x60 (`か` U+304B, `カ` U+30AB).
    let hiragana = (0x3041..=0x309F).contains(&(kana as u32));
    let n = kana as u32 + if hiragana { 0x60 } else { 0 };
    let ha_row = (0x30CF..=0x30DB).contains(&n) && (n - 0x30CF).is_multiple_of(3);
    let to = match mark {
        '\u{FF9E}' | '\u{3099}' => match n {
            // カ to チ, ツ to ト (not the small ッ), ハ to ホ.
            0x30AB..=0x30C1 if !n.is_multiple_of(2) => n + 1,
            0x30C4..=0x30C8 if n.is_multiple_of(2) => n + 1,
            _ if ha_row => n + 1,
            0x30A6 => 0x30F4,
            // ワ, ヰ, ヱ, ヲ have no voiced hiragana.
            0x30EF..=0x30F2 if !hiragana => n + 8,
            // The iteration marks: ゝ, ヽ.
            0x30FD => 0x30FE,
            _ => return None,
        },
        '\u{FF9F}' | '\u{309A}' if ha_row => n + 2,
        _ => return None,
    };
    char::from_u32(to - if hiragana { 0x60 } else { 0 })
}

/// What a lower-case letter stands for in a term, besides the Latin letters of [`LATIN`]: the
/// Greek letters without their tonos and dialytika, the Latin ligatures and letters written as
/// two, and the one letter the Arabic letter variants stand for; `""` for any other character.
fn fold(c: char) -> &'static str {
    match c {
        // Greek: tonos and dialytika (Αθήνα and ΑΘΗΝΑ are one term).
        'ά' => "α",
        'έ' => "ε",
        'ή' => "η",
        'ί' | 'ϊ' | 'ΐ' => "ι",
        'ό' => "ο",
        'ύ' | 'ϋ' | 'ΰ' => "υ",
        'ώ' => "ω",
        'ß' => "ss",
        'æ' => "ae",
        'œ' => "oe",
        'þ' => "th",
        // Letters whose decomposition is a letter without one.
        'ǣ' | 'ǽ' => "ae",
        'ǿ' => "o",
        'ǯ' => "ʒ",
        'ſ' | 'ẛ' => "s",
        // Arabic: alef with hamza or madda is alef, alef maksura and the Persian yeh are yeh, teh
        // marbuta is heh, the Persian keheh is kaf (how the letters are typed varies: `احمد` and
        // `أحمد` are one name).
        'أ' | 'إ' | 'آ' | 'ٱ' => "ا",
        'ى' | 'ی' | 'ئ' => "ي",
        'ة' | 'ۀ' => "ه",
        'ک' => "ك",
        // The other letters with hamza are their letter, as when the hamza is written apart (a
        // mark, dropped).
        'ؤ' => "و",
        'ۂ' => "ہ",
        'ۓ' => "ے",
        _ => "",
    }
}

/// `c` in lower case, for the scripts whose case is a fixed offset or an alternation (Latin,
/// Greek, Cyrillic, Armenian): computed, so the module carries no Unicode case tables. The
/// full-width Latin letters and digits a Chinese or Japanese input method types (`ＯｐｅｎＡＩ`,
/// `２０２４`) are their ASCII letters and digits, and so are the Arabic-Indic digits (`٢٠٢٤`).
fn lower(c: char) -> char {
    let n = c as u32;
    let to = match n {
        0x41..=0x5A | 0xC0..=0xD6 | 0xD8..=0xDE => n + 0x20,
        // Latin Extended-A: upper case at even code points (İ, ı and ĸ aside).
        0x100..=0x12F | 0x132..=0x137 | 0x14A..=0x177 if n.is_multiple_of(2) => n + 1,
        0x139..=0x148 | 0x179..=0x17E if n % 2 == 1 => n + 1,
        0x178 => 0xFF,
        // İ (Turkish dotted capital I) is i; ẞ (capital sharp s) is ß.
        0x130 => 0x69,
        0x1E9E => 0xDF,
        // Latin Extended-B: Ơ and Ư (Vietnamese), the pinyin vowels with carons, and the
        // alternating pairs (Romanian Ș and Ț among them).
        0x1A0 | 0x1AF => n + 1,
        0x1CD..=0x1DC if n % 2 == 1 => n + 1,
        0x1DE..=0x1EF | 0x1F8..=0x21F | 0x222..=0x233 if n.is_multiple_of(2) => n + 1,
        // The other capitals of Latin Extended-B (Azerbaijani Ə, the hooked letters of West
        // African alphabets, the digraphs).
        0x181..=0x24E => {
            let mut pairs = LATIN_B_CASES.chars();
            loop {
                match (pairs.next(), pairs.next()) {
                    (Some(upper), Some(lower)) if upper == c => break lower as u32,
                    (Some(_), Some(_)) => {}
                    _ => break n,
                }
            }
        }
        0x391..=0x3A1 | 0x3A3..=0x3AB => n + 0x20,
        // Greek's archaic letters (heta, sampi, digamma, koppa, san, sho), its other capitals (kai,
        // yot, theta and lunate sigma symbols, the reversed ones) and the Coptic ones of its block.
        0x370 | 0x372 | 0x376 | 0x3F7 | 0x3FA => n + 1,
        0x3D8..=0x3EF if n.is_multiple_of(2) => n + 1,
        0x37F => 0x3F3,
        0x3CF => 0x3D7,
        0x3F4 => 0x3B8,
        0x3F9 => 0x3F2,
        0x3FD..=0x3FF => n - 0x82,
        0x386 => 0x3AC,
        0x388..=0x38A => n + 0x25,
        0x38C => 0x3CC,
        0x38E | 0x38F => n + 0x3F,
        // Final sigma is sigma.
        0x3C2 => 0x3C3,
        0x410..=0x42F => n + 0x20,
        0x400..=0x40F => n + 0x50,
        0x460..=0x481 | 0x48A..=0x4BF | 0x4D0..=0x52F if n.is_multiple_of(2) => n + 1,
        // Palochka, then the capitals of U+04C1 to U+04CD at odd code points (Ӂ, Ӄ, Ӆ, Ӈ, Ӊ, Ӌ, Ӎ).
        0x4C0 => 0x4CF,
        0x4C1..=0x4CD if n % 2 == 1 => n + 1,
        0x531..=0x556 => n + 0x30,
        0x1E00..=0x1E95 | 0x1EA0..=0x1EFF if n.is_multiple_of(2) => n + 1,
        0xFF21..=0xFF3A => n - 0xFEC0,
        0xFF10..=0xFF19 | 0xFF41..=0xFF5A => n - 0xFEE0,
        0x0660..=0x0669 => n - 0x0630,
        0x06F0..=0x06F9 => n - 0x06C0,
        _ => n,
    };
    char::from_u32(to).unwrap_or(c)
}

/// Whether `c` belongs in a word: letters and digits of every script. Told apart from
/// punctuation, symbols and spaces by their blocks rather than by Unicode's tables (which would
/// weigh on the module): the blocks of punctuation, symbols, arrows, box drawing, emoji and
/// private use are not word characters, nor is ASCII or Latin-1 punctuation.
fn is_word(c: char) -> bool {
    let n = c as u32;
    match n {
        0..=0x7F => c.is_ascii_alphanumeric(),
        0x80..=0xBF => matches!(n, 0xAA | 0xB2 | 0xB3 | 0xB5 | 0xB9 | 0xBA | 0xBC..=0xBE),
        0xD7 | 0xF7 => false,
        // Punctuation and currency signs inside the blocks of Thai, Lao, Khmer and Burmese.
        0x0E2F
        | 0x0E3F
        | 0x0E4F
        | 0x0E5A
        | 0x0E5B
        | 0x0EAF
        | 0x17D4..=0x17D6
        | 0x17D8..=0x17DB
        | 0x104A
        | 0x104B => false,
        // Japanese ゠ and ・; the enclosed and squared letters, numbers and units of the CJK
        // blocks (`㈱`, `㉑`, `㎏`: `5㎏` is the number 5); the full-width currency and other
        // signs (`￥5000` is the number 5000).
        0x30A0 | 0x30FB | 0x3200..=0x33FF | 0xFFE0..=0xFFEE => false,
        // Sentence and clause marks of other scripts, in their letters' blocks: Greek's question
        // mark and ano teleia, Armenian's, Hebrew's maqaf and sof pasuq, Arabic's comma,
        // semicolon, question mark and full stop (Urdu's too), the Indic dandas, Ethiopic's
        // word space and stops.
        0x037E
        | 0x0387
        | 0x055A..=0x055F
        | 0x0589
        | 0x058A
        | 0x05BE
        | 0x05C3
        | 0x060C
        | 0x061B
        | 0x061F
        | 0x066A..=0x066D
        | 0x06D4
        | 0x0964
        | 0x0965
        | 0x0970
        | 0x1361..=0x1368 => false,
        0x2000..=0x2BFF
        | 0x2E00..=0x2E7F
        | 0x3000..=0x303F
        | 0xE000..=0xF8FF
        | 0xFE00..=0xFE6F
        | 0xFEFF
        | 0xFF00..=0xFF0F
        | 0xFF1A..=0xFF20
        | 0xFF3B..=0xFF40
        | 0xFF5B..=0xFF65
        | 0xFFF0..=0xFFFF
        | 0x1F000..=0x1FAFF
        | 0xE0000..=0xE007F => false,
        _ => !c.is_whitespace(),
    }
}

/// Appends `c` lower-cased and folded to `term`.
fn push_folded(term: &mut String, c: char) {
    let lower = lower(c);
    match (latin_letter(lower), fold(lower)) {
        (Some(letter), _) => term.push(letter),
        (None, "") => term.push(lower),
        (None, plain) => term.push_str(plain),
    }
}

/// The tokens of `text`, in order: words (runs of letters and digits, lower-cased, diacritics
/// folded; a combining mark inside a word does not split it) and, in the scripts written without
/// spaces ([`is_unspaced`]: Chinese, Japanese, Korean, Thai, Lao, Khmer, Burmese), every pair of
/// neighbouring characters (one character alone is a token).
pub fn tokenize(text: &str) -> Vec<Token> {
    tokenize_runs(text).0
}

/// [`tokenize`], and the last character of each run of two or more characters of the scripts
/// written without spaces, as it counts in the run's pairs (a half-width kana full-width).
fn tokenize_runs(text: &str) -> (Vec<Token>, Vec<char>) {
    let mut ends = Vec::new();
    let mut tokens = Vec::new();
    let mut word = String::new();
    let mut word_start = 0;
    let mut unspaced: Vec<(usize, char, usize)> = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let flush_word = |word: &mut String, start: usize, end: usize, tokens: &mut Vec<Token>| {
        if !word.is_empty() {
            let position = tokens.len() as u32;
            tokens.push(Token {
                term: std::mem::take(word),
                position,
                start,
                end,
            });
        }
    };
    // A run of characters of the scripts written without spaces: where each starts, what it
    // counts as, and where it ends (after the sound mark a half-width kana takes with it).
    let flush_pairs =
        |run: &mut Vec<(usize, char, usize)>, tokens: &mut Vec<Token>, ends: &mut Vec<char>| {
            match run.len() {
                0 => {}
                1 => {
                    let (start, c, end) = run[0];
                    let position = tokens.len() as u32;
                    tokens.push(Token {
                        term: c.to_string(),
                        position,
                        start,
                        end,
                    });
                }
                _ => {
                    ends.extend(run.last().map(|last| last.1));
                    for pair in run.windows(2) {
                        let position = tokens.len() as u32;
                        tokens.push(Token {
                            term: [pair[0].1, pair[1].1].iter().collect(),
                            position,
                            start: pair[0].0,
                            end: pair[1].2,
                        });
                    }
                }
            }
            run.clear();
        };
    for (i, &c) in chars.iter().enumerate() {
        // A variation selector, and a combining mark after a character of a run (an accent over
        // an ideograph; the sound mark of a kana in NFD, one character with it where NFC has
        // one): the run's character ends after it, and the run goes on. (A sound mark anywhere
        // else is dropped, as the marks of words are.)
        let after_run = unspaced.last().is_some_and(|last| last.2 == i);
        if is_variation_selector(c)
            || matches!(c, '\u{3099}' | '\u{309A}')
            || (after_run && is_mark(c))
        {
            if let Some(last) = unspaced.last_mut().filter(|_| after_run) {
                last.1 = voiced(last.1, c).unwrap_or(last.1);
                last.2 = i + 1;
            }
            continue;
        }
        // A jamo after the jamo or syllable it makes a syllable with is one character with it.
        if let Some(last) = unspaced.last_mut().filter(|_| after_run) {
            if let Some(syllable) = hangul(last.1, c) {
                last.1 = syllable;
                last.2 = i + 1;
                continue;
            }
        }
        if is_unspaced(c) {
            flush_word(&mut word, word_start, i, &mut tokens);
            unspaced.push((i, full_width_kana(c), i + 1));
            continue;
        }
        if joins_run(&chars, i, after_run) {
            continue;
        }
        // A half-width sound mark right after a half-width kana is part of it (`ｶﾞ` is `ガ`).
        let after_half_width = i > 0 && is_half_width_kana(chars[i - 1]);
        if let Some(last) = unspaced.last_mut().filter(|_| after_half_width) {
            if let Some(v) = voiced(last.1, c) {
                last.1 = v;
                last.2 = i + 1;
                continue;
            }
        }
        flush_pairs(&mut unspaced, &mut tokens, &mut ends);
        if is_mark(c)
            || matches!(
                c,
                '\u{AD}' | '\u{200C}' | '\u{200D}' | '\u{640}' | '\u{61C}'
            )
        {
            // An accent written apart belongs to its letter, and a soft hyphen, a zero-width
            // (non-)joiner (Persian, the Indic scripts), an Arabic tatweel (the stroke that
            // stretches a word, `كـتـاب`) or Arabic letter mark (a direction mark) to its word:
            // dropped, the word goes on. A Cyrillic letter and its mark that NFC writes as one
            // letter are that letter (`й` is not `и`).
            if let Some(letter) = word
                .chars()
                .next_back()
                .and_then(|last| cyrillic_marked(last, c))
            {
                word.pop();
                word.push(letter);
            }
        } else if is_word(c) {
            if word.is_empty() {
                word_start = i;
            }
            push_folded(&mut word, c);
        } else {
            flush_word(&mut word, word_start, i, &mut tokens);
        }
    }
    flush_word(&mut word, word_start, chars.len(), &mut tokens);
    flush_pairs(&mut unspaced, &mut tokens, &mut ends);
    (tokens, ends)
}

/// The distinct terms of a text, in the order they first appear, at most
/// [`MAX_TERMS_PER_ITEM`]: what an item is indexed under. Besides its tokens, the last character
/// of each run of two or more characters of a script written without spaces, alone: a query of
/// one character looks up the terms it starts (see [`single`]), and a character that only ends a
/// run starts none of its pairs (`猫` in `一只猫`).
pub fn index_terms(text: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    // The terms so far, sorted (a hash set would bring its code into the main module for this
    // one use).
    let mut seen: Vec<String> = Vec::new();
    let mut cut = false;
    let mut add = |term: String| {
        if let Err(at) = seen.binary_search(&term) {
            // (A term seen already is no term lost.)
            if terms.len() == MAX_TERMS_PER_ITEM {
                cut = true;
                return;
            }
            seen.insert(at, term.clone());
            terms.push(term);
        }
    };
    let (tokens, ends) = tokenize_runs(text);
    for token in tokens {
        add(token.term);
    }
    for last in ends {
        add(last.to_string());
    }
    if cut {
        terms.push(PARTIAL.to_string());
    }
    terms
}

/// What [`joined_keys`] puts between two index keys. A key never holds two NULs in a row (the
/// owner's prefix ends in its only NUL, and a term is never empty and holds none), nor ends in
/// one, so splitting at the first of each pair of NULs gives the keys back exactly, including a
/// key that begins with a NUL (that of a session without an owner).
pub const KEY_SEPARATOR: &str = "\0\0";

/// The index keys of `terms` for the owner whose prefix is `prefix` (see [`owner_prefix`]), as
/// one string, [`KEY_SEPARATOR`] between them.
pub fn joined_keys(prefix: &str, terms: &[String]) -> String {
    let mut keys = String::new();
    for (i, term) in terms.iter().enumerate() {
        if i > 0 {
            keys.push_str(KEY_SEPARATOR);
        }
        keys.push_str(prefix);
        keys.push_str(term);
    }
    keys
}

/// The prefix of an owner's index keys: the owner (`""` for none) with `\u{1}` and NUL
/// escaped (so no owner's keys can be read as another's), then a NUL. An index key is this
/// followed by a term, which never holds either character.
pub fn owner_prefix(owner: Option<&str>) -> String {
    let mut key = String::new();
    for c in owner.unwrap_or("").chars() {
        match c {
            '\u{1}' => key.push_str("\u{1}1"),
            '\0' => key.push_str("\u{1}0"),
            c => key.push(c),
        }
    }
    key.push('\0');
    key
}

/// One condition of a query; an item matches a query when it meets every one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Clause {
    /// A whole term.
    Term(String),
    /// A term that starts with this (`prefix*`).
    Prefix(String),
    /// Terms that follow each other, in this order (`"quoted words"`, or text of a script written
    /// without spaces longer than two characters, whose pairs must follow each other), with
    /// [`Joins`].
    Phrase(Vec<String>, Joins),
    /// Terms and prefixes that follow each other, in this order: a query word or phrase that a
    /// phrase of whole terms cannot be, since it ends in a prefix (`gpt-4*`) or holds one
    /// character of a script written without spaces (`5月`, `"5月3日"`), which is found inside
    /// the pairs of the text's run (see [`match_text`]); with [`Joins`].
    Run(Vec<Clause>, Joins),
}

/// For each term of a phrase or run after the first, whether it overlaps the one before: the
/// pairs of one run of a script written without spaces do (`東京都`: `東京`, `京都`). The text's
/// terms must too, so that two runs that merely share a character (`東京、京都`) are no match.
pub type Joins = Vec<bool>;

/// The [`Joins`] of `tokens`.
fn joins(tokens: &[Token]) -> Joins {
    tokens.windows(2).map(|w| w[1].start < w[0].end).collect()
}

/// The terms of a query's word or quoted phrase, and their [`Joins`].
fn terms_and_joins(text: &str) -> (Vec<String>, Joins) {
    let tokens = tokenize(text);
    let joined = joins(&tokens);
    (tokens.into_iter().map(|t| t.term).collect(), joined)
}

impl Clause {
    /// The terms to look up in the index for this clause, each with whether it is a prefix
    /// (looked up as a range): each one's items hold the clause's terms.
    pub fn terms(&self) -> Vec<(&str, bool)> {
        match self {
            Clause::Term(t) => vec![(t.as_str(), false)],
            Clause::Prefix(t) => vec![(t.as_str(), true)],
            Clause::Phrase(ts, _) => ts.iter().map(|t| (t.as_str(), false)).collect(),
            Clause::Run(parts, _) => parts.iter().flat_map(Clause::terms).collect(),
        }
    }
}

/// Parses a query: words are AND-ed, `"…"` is a phrase (full-width `＂…＂`, curly `“…”`, `„…“`
/// and `«…»` too),
/// `word*` a prefix (`word＊` too). Words are tokenised as
/// the items are, so a query word that is several tokens (`e-mail`, `東京の`) is a phrase of them,
/// and a single character of a script written without spaces is a prefix of the pairs it starts. An empty or blank query is
/// no clause; one longer than [`MAX_QUERY`] characters is `INVALID_QUERY`.
pub fn parse_query(query: &str) -> Result<Vec<Clause>> {
    let length = query.chars().count();
    if length > MAX_QUERY {
        return Err(SessionError::new(
            SessionErrorCode::InvalidQuery,
            format!("a query is at most {MAX_QUERY} characters, this one has {length}"),
        ));
    }
    // The quotes and star a Chinese or Japanese input method types (full-width), the curly
    // quotes a phone's keyboard puts in, and the quotes of German, Polish or Czech (`„…“`, `„…”`)
    // and French (`«…»`) are the query's own.
    let query: String = query
        .chars()
        .map(|c| match c {
            '＂' | '“' | '”' | '„' | '‟' | '«' | '»' => '"',
            '＊' => '*',
            c => c,
        })
        .collect();
    let mut clauses: Vec<Clause> = Vec::new();
    let mut push = |clause: Clause| {
        if !clauses.contains(&clause) {
            clauses.push(clause);
        }
    };
    for (i, part) in query.split('"').enumerate() {
        // Odd parts are inside quotes (an unclosed quote runs to the end).
        if i % 2 == 1 {
            let (terms, joined) = terms_and_joins(part);
            match terms.len() {
                0 => {}
                1 => push(single(terms.into_iter().next().unwrap_or_default(), false)),
                // One character of a script written without spaces is indexed only inside its
                // pairs: a phrase of whole terms holding one could match nothing (`"3월"`).
                _ if terms.iter().any(|t| lone(t)) => {
                    push(Clause::Run(
                        terms.into_iter().map(|t| single(t, false)).collect(),
                        joined,
                    ));
                }
                _ => push(Clause::Phrase(terms, joined)),
            }
            continue;
        }
        for word in part.split_whitespace() {
            let prefix = word.ends_with('*');
            let (terms, joined) = terms_and_joins(word);
            match terms.len() {
                0 => {}
                1 => push(single(terms.into_iter().next().unwrap_or_default(), prefix)),
                // A phrase of whole terms cannot hold a prefix (`gpt-4*`) or one character of a
                // script written without spaces (`3월`, `5月`: indexed only inside its pairs):
                // a run of terms and prefixes then, the last a prefix with `*`.
                n if prefix || terms.iter().any(|t| lone(t)) => {
                    push(Clause::Run(
                        terms
                            .into_iter()
                            .enumerate()
                            .map(|(i, t)| single(t, prefix && i == n - 1))
                            .collect(),
                        joined,
                    ));
                }
                _ => push(Clause::Phrase(terms, joined)),
            }
        }
    }
    Ok(clauses)
}

/// Whether a token is one character of a script written without spaces (indexed only inside
/// its pairs, or alone where it is a run of one).
fn lone(term: &str) -> bool {
    term.chars().count() == 1 && term.chars().all(is_unspaced)
}

/// The clause of a one-token query word: a term, a prefix, or, for one character of a script
/// written without spaces (indexed only inside its pairs), the prefix of those.
fn single(term: String, prefix: bool) -> Clause {
    match prefix || lone(&term) {
        true => Clause::Prefix(term),
        false => Clause::Term(term),
    }
}

/// How an item's text meets a query: `None` when it misses a clause; else its tokens' count and,
/// per clause, how often it matched and the first match (character offsets).
#[derive(Debug, Clone, PartialEq)]
pub struct Match {
    pub length: usize,
    pub frequencies: Vec<u32>,
    pub first: (usize, usize),
}

/// Checks `text` against the clauses.
pub fn match_text(text: &str, clauses: &[Clause]) -> Option<Match> {
    let tokens = tokenize(text);
    let mut frequencies = Vec::with_capacity(clauses.len());
    let mut first: Option<(usize, usize)> = None;
    for clause in clauses {
        let mut count = 0;
        // One character of a script written without spaces is in a pair that starts with it or
        // in one that ends with it where it ends its run: each mention counted once (inside a
        // run it is in two pairs, which counted it twice and ranked one mention over two).
        let alone = matches!(clause, Clause::Prefix(p) if lone(p));
        for (i, token) in tokens.iter().enumerate() {
            // (A pair can hold two mentions: `妈妈` ending its run.)
            let mut mentions = 1;
            let hit = match clause {
                Clause::Term(t) => (token.term == *t).then_some(token.end),
                Clause::Prefix(p) => {
                    let starts = token.term.starts_with(p.as_str());
                    let ends = alone
                        && token.term.len() > p.len()
                        && token.term.ends_with(p.as_str())
                        && tokens.get(i + 1).is_none_or(|next| next.start >= token.end);
                    mentions = u32::from(starts) + u32::from(ends);
                    (mentions > 0).then_some(token.end)
                }
                Clause::Phrase(ts, joined) => {
                    let run = tokens.get(i..i + ts.len());
                    run.filter(|run| {
                        run.iter().zip(ts).all(|(a, b)| a.term == *b) && joins(run) == *joined
                    })
                    .and_then(|run| run.last())
                    .map(|last| last.end)
                }
                Clause::Run(parts, joined) => {
                    let n = parts.len();
                    let run = tokens.get(i..i + n);
                    run.filter(|run| {
                        run.iter()
                            .zip(parts)
                            .enumerate()
                            .all(|(k, (token, part))| in_run(&token.term, part, k, n))
                            && joins(run) == *joined
                    })
                    .and_then(|run| run.last())
                    .map(|last| last.end)
                }
            };
            if let Some(end) = hit {
                count += mentions;
                if first.is_none_or(|(start, _)| token.start < start) {
                    first = Some((token.start, end));
                }
            }
        }
        if count == 0 {
            return None;
        }
        frequencies.push(count);
    }
    Some(Match {
        length: tokens.len(),
        frequencies,
        first: first.unwrap_or((0, 0)),
    })
}

/// The most terms a search looks up in the index. A longer query (a pasted paragraph) looks up
/// only its longest words' clauses, the likeliest to be rare, and checks the others in the text
/// of the items those give: listing every common word's items would hold the read, and the
/// chat's writes behind it, for seconds.
pub const LOOKUPS_AT_MOST: usize = 12;

/// Which clauses a search looks up in the index (indices into `clauses`, in order): all of them
/// while their terms are at most `at_most`, else those with the longest terms that fit (at
/// least one).
pub fn looked_up(clauses: &[Clause], at_most: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..clauses.len()).collect();
    let longest = |c: usize| {
        clauses[c]
            .terms()
            .iter()
            .map(|(t, _)| t.chars().count())
            .max()
            .unwrap_or(0)
    };
    // The longest first; ties in the query's order (the sort is not stable).
    crate::core::sort::sort_by_key(&mut order, |&c| (std::cmp::Reverse(longest(c)), c));
    let mut taken = Vec::new();
    let mut terms = 0;
    for c in order {
        let n = clauses[c].terms().len();
        if !taken.is_empty() && terms + n > at_most {
            continue;
        }
        terms += n;
        taken.push(c);
    }
    crate::core::sort::sort_by_key(&mut taken, |&c| c);
    taken
}

/// Whether a token of the text is part `k` of a run of `n` query parts. A term is that token;
/// a prefix (the last part) starts it; one character of a script written without spaces ends
/// the text's run where a part follows it (the token is the run's last pair, or the run of one)
/// and starts it where one comes before (its first pair).
fn in_run(token: &str, part: &Clause, k: usize, n: usize) -> bool {
    match part {
        Clause::Term(t) => token == t,
        Clause::Prefix(p) if lone(p) => {
            (k == 0 || token.starts_with(p.as_str())) && (k + 1 == n || token.ends_with(p.as_str()))
        }
        Clause::Prefix(p) => token.starts_with(p.as_str()),
        _ => false,
    }
}

/// BM25's parameters (the usual ones).
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// The BM25 score of a match: `documents` items searched, `frequencies[i]` of them holding
/// clause `i` (`document_frequencies`), items `average_length` tokens long on average.
pub fn score(m: &Match, document_frequencies: &[u64], documents: u64, average_length: f64) -> f64 {
    let n = documents.max(1) as f64;
    let average = if average_length > 0.0 {
        average_length
    } else {
        1.0
    };
    m.frequencies
        .iter()
        .zip(document_frequencies)
        .map(|(&tf, &df)| {
            let df = (df as f64).min(n);
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            let tf = tf as f64;
            idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * m.length as f64 / average))
        })
        .sum()
}

/// Whether a cut just before `chars[i]` would split what is seen as one character: `chars[i]` is
/// a combining mark, a zero-width joiner, a variation selector or a skin tone, or follows a
/// joiner, or is the second half of a flag.
fn inside_grapheme(chars: &[char], i: usize) -> bool {
    let joins = |c: char| {
        is_mark(c)
            || matches!(c as u32, 0x200D | 0x3099 | 0x309A | 0xFE00..=0xFE0F | 0x1F3FB..=0x1F3FF | 0xE0100..=0xE01EF
                // A Hangul vowel or final consonant written as a jamo (NFD), part of its syllable.
                | 0x1160..=0x11FF | 0xD7B0..=0xD7FF
                // The vowel signs and tone marks of Thai, Lao, Khmer, Burmese and Devanagari,
                // written over, under or beside their letter.
                | 0x0E31 | 0x0E33..=0x0E3A | 0x0E47..=0x0E4E
                | 0x0EB1 | 0x0EB3..=0x0EBC | 0x0EC8..=0x0ECD
                | 0x17B4..=0x17D3 | 0x17DD
                | 0x102B..=0x103E | 0x1056..=0x1059 | 0x105E..=0x1060 | 0x1062..=0x1064
                | 0x1067..=0x106D | 0x1071..=0x1074 | 0x1082..=0x108D | 0x108F | 0x109A..=0x109D
                | 0x0900..=0x0903 | 0x093A..=0x094F | 0x0951..=0x0957 | 0x0962..=0x0963
                // Those of Bengali, Gurmukhi, Gujarati, Oriya, Tamil, Telugu, Kannada,
                // Malayalam and Sinhala.
                | 0x0981..=0x0983 | 0x09BC | 0x09BE..=0x09CD | 0x09D7 | 0x09E2..=0x09E3
                | 0x0A01..=0x0A03 | 0x0A3C..=0x0A51 | 0x0A70..=0x0A71 | 0x0A75
                | 0x0A81..=0x0A83 | 0x0ABC..=0x0ACD | 0x0AE2..=0x0AE3
                | 0x0B01..=0x0B03 | 0x0B3C..=0x0B57 | 0x0B62..=0x0B63
                | 0x0B82 | 0x0BBE..=0x0BCD | 0x0BD7
                | 0x0C00..=0x0C04 | 0x0C3C..=0x0C56 | 0x0C62..=0x0C63
                | 0x0C81..=0x0C83 | 0x0CBC..=0x0CD6 | 0x0CE2..=0x0CE3
                | 0x0D00..=0x0D03 | 0x0D3B..=0x0D57 | 0x0D62..=0x0D63
                | 0x0D81..=0x0D83 | 0x0DCA..=0x0DF3)
    };
    // (A half-width sound mark belongs to the half-width kana before it.)
    let sound_mark =
        |i: usize| matches!(chars[i] as u32, 0xFF9E | 0xFF9F) && is_half_width_kana(chars[i - 1]);
    // A flag is two regional indicators: the second of a pair is one after an odd number of them.
    let regional = |c: &char| matches!(*c as u32, 0x1F1E6..=0x1F1FF);
    let in_flag = |i: usize| {
        regional(&chars[i]) && chars[..i].iter().rev().take_while(|c| regional(c)).count() % 2 == 1
    };
    i > 0
        && i < chars.len()
        && (joins(chars[i]) || chars[i - 1] == '\u{200D}' || sound_mark(i) || in_flag(i))
}

/// The text around a match, at most about [`SNIPPET`] characters, cut at word boundaries where
/// it can be, with `…` where it was cut; white space runs become one space. Plain text.
pub fn snippet(text: &str, (start, end): (usize, usize)) -> String {
    let chars: Vec<char> = text.chars().collect();
    let length = chars.len();
    let hit = end.saturating_sub(start).min(SNIPPET);
    let room = SNIPPET - hit;
    let mut from = start.saturating_sub(room / 3);
    let mut to = (start + hit + room - (start - from)).min(length);
    if to == length {
        from = to.saturating_sub(SNIPPET);
    }
    // Move each cut back to a space near it, so no word is cut in two.
    if from > 0 {
        if let Some(space) = (from..start.min(from + 20)).find(|&i| chars[i].is_whitespace()) {
            from = space + 1;
        }
    }
    if to < length {
        if let Some(space) = (to.saturating_sub(20).max(end)..to)
            .rev()
            .find(|&i| chars[i].is_whitespace())
        {
            to = space;
        }
    }
    // Nor a letter from its accents, nor an emoji from what joins it (a skin tone, a family).
    while from > 0 && from < start && inside_grapheme(&chars, from) {
        from += 1;
    }
    while to < length && to > end && inside_grapheme(&chars, to) {
        to -= 1;
    }
    let mut out = String::new();
    if from > 0 {
        out.push('…');
    }
    // The text starts after the cut's mark: a space is kept between two words of the text, not
    // after the mark (nor after a `…` of the text itself, which the mark is not).
    let start = out.len();
    let mut space = false;
    for &c in &chars[from..to] {
        if c.is_whitespace() {
            space = true;
            continue;
        }
        if space && out.len() > start {
            out.push(' ');
        }
        space = false;
        out.push(c);
    }
    if to < length {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joined_keys_split_back_into_the_keys_for_every_owner() {
        let terms: Vec<String> = index_terms("Weather in 北京 and the bridge, again: weather");
        assert!(terms.len() > 3);
        for owner in [
            None,
            Some(""),
            Some("ann"),
            Some("\0"),
            Some("\0\0x\u{1}"),
            Some("a\u{1}0\0"),
        ] {
            let prefix = owner_prefix(owner);
            let keys: Vec<String> = terms.iter().map(|t| format!("{prefix}{t}")).collect();
            // As JS's `split` with a string separator: leftmost matches, none overlapping.
            let joined = joined_keys(&prefix, &terms);
            let back: Vec<&str> = joined.split(KEY_SEPARATOR).collect();
            assert_eq!(back, keys, "{owner:?}");
        }
        assert_eq!(joined_keys("\0", &[]), "");
    }

    #[test]
    fn a_term_is_never_empty_and_holds_no_nul_or_u0001() {
        // An index key is the owner's prefix (escaped so it holds no NUL, then one NUL) and a
        // term: a term holding a NUL or U+0001 could be read as another owner's key. (The one
        // term that is U+0001 alone, PARTIAL, is no text's: see the test after the next.)
        for term in index_terms("a\0b \u{1}c\u{1} d\0\u{1}e \0\0 \u{1} caf\u{e9} 東京都") {
            assert!(!term.is_empty());
            assert!(!term.contains('\0') && !term.contains('\u{1}'), "{term:?}");
        }
        assert_eq!(index_terms("a\0b"), ["a", "b"]);
    }

    fn terms(text: &str) -> Vec<String> {
        tokenize(text).into_iter().map(|t| t.term).collect()
    }

    #[test]
    fn words_are_lower_cased_and_folded() {
        assert_eq!(
            terms("Café au LAIT, déjà-vu!"),
            ["cafe", "au", "lait", "deja", "vu"]
        );
        assert_eq!(terms("Straße Æsop naïve"), ["strasse", "aesop", "naive"]);
        // An accent written as a combining mark folds the same way.
        assert_eq!(terms("cafe\u{301}"), ["cafe"]);
        // An apostrophe splits (l'eau is found by eau); the query "don't" is the phrase don t.
        assert_eq!(terms("don't l'eau"), ["don", "t", "l", "eau"]);
        assert_eq!(
            terms("Ünïcødé 42nd ΑΘΗΝΑ москва"),
            ["unicode", "42nd", "αθηνα", "москва"]
        );
        // Capitals outside the offset blocks, Greek accents and final sigma, a Greek word
        // written with combining accents: each one term with how it is typed in lower case.
        assert_eq!(
            terms("İstanbul STRAẞE ȘTIRI ȚARĂ TRƯỜNG ƠN ǓǙ"),
            ["istanbul", "strasse", "stiri", "tara", "truong", "on", "uu"]
        );
        assert_eq!(
            terms("Αθήνα ΟΔΟΣ οδός \u{3b1}\u{3b8}\u{3b7}\u{301}\u{3bd}\u{3b1} Ϊ"),
            ["αθηνα", "οδοσ", "οδοσ", "αθηνα", "ι"]
        );
    }

    #[test]
    fn cjk_is_indexed_as_bigrams() {
        assert_eq!(terms("東京の天気"), ["東京", "京の", "の天", "天気"]);
        assert_eq!(terms("東"), ["東"]);
        assert_eq!(terms("hello 東京 world"), ["hello", "東京", "world"]);
        assert_eq!(terms("서울 날씨"), ["서울", "날씨"]);
        let t = tokenize("ab 東京の");
        assert_eq!((t[1].start, t[1].end, t[2].start, t[2].end), (3, 5, 4, 6));
    }

    #[test]
    fn thai_lao_khmer_and_burmese_are_indexed_as_pairs_too() {
        // Thai: "weather today" written as one run; its vowel signs are characters of the pairs.
        assert_eq!(
            terms("อากาศวันนี้"),
            ["อา", "าก", "กา", "าศ", "ศว", "วั", "ัน", "นน", "นี", "ี้"]
        );
        assert_eq!(terms("ร้อน 30°C"), ["ร้", "้อ", "อน", "30", "c"]);
        // Punctuation and currency signs of the block split a run.
        assert_eq!(terms("กข฿คง"), ["กข", "คง"]);
        assert_eq!(terms("ກິນເຂົ້າ"), ["ກິ", "ິນ", "ນເ", "ເຂ", "ຂົ", "ົ້", "້າ"]);
        assert_eq!(terms("ភ្នំពេញ។"), ["ភ្", "្ន", "នំ", "ំព", "ពេ", "េញ"]);
        assert_eq!(
            terms("မြန်မာ၊ ဘာသာ"),
            ["မြ", "ြန", "န်", "်မ", "မာ", "ဘာ", "ာသ", "သာ"]
        );
        // A word inside a longer run is found: the query's pairs follow each other there.
        let clauses = parse_query("วันนี้").unwrap();
        assert!(match_text("อากาศวันนี้ร้อนมาก", &clauses).is_some());
        assert!(match_text("อากาศพรุ่งนี้", &clauses).is_none());
        // One character is the prefix of the pairs it starts.
        assert_eq!(parse_query("ร").unwrap(), [Clause::Prefix("ร".into())]);
    }

    #[test]
    fn one_character_is_found_where_it_ends_a_run() {
        // Indexed under the pairs, and the run's last character alone.
        assert_eq!(
            index_terms("我有一只猫。우리집"),
            ["我有", "有一", "一只", "只猫", "우리", "리집", "猫", "집"]
        );
        assert_eq!(index_terms("東"), ["東"]);
        for (text, query) in [
            ("我有一只猫。", "猫"),
            ("우리집", "집"),
            ("东京", "东"),
            ("黒い猫", "い"),
        ] {
            let clauses = parse_query(query).unwrap();
            let m = match_text(text, &clauses);
            assert!(m.is_some(), "{query} in {text}");
            let terms = index_terms(text);
            assert!(
                terms.iter().any(|t| t.starts_with(query)),
                "{query} is looked up in {terms:?}"
            );
        }
        assert!(match_text("我有一只狗", &parse_query("猫").unwrap()).is_none());
        // Phrases are pairs that follow each other: the lone characters take no place among them.
        assert!(match_text("東京の天気", &parse_query("東京の").unwrap()).is_some());
    }

    #[test]
    fn the_punctuation_of_other_scripts_ends_a_word_and_joiners_do_not() {
        assert_eq!(
            terms("मैं घर जा रहा हूँ। ठीक॥"),
            ["मैं", "घर", "जा", "रहा", "हूँ", "ठीक"]
        );
        assert_eq!(
            terms("مرحبا، كيف؟ نعم؛ تمام۔"),
            ["مرحبا", "كيف", "نعم", "تمام"]
        );
        assert_eq!(terms("Ναι; καλά·"), ["ναι", "καλα"]);
        assert_eq!(terms("Բարեւ։ ինչպես՞"), ["բարեւ", "ինչպես"]);
        assert_eq!(terms("ሰላም። እንዴት፣"), ["ሰላም", "እንዴት"]);
        assert_eq!(terms("בית־ספר"), ["בית", "ספר"]);
        // A soft hyphen, a zero-width non-joiner and a joiner stay inside their word.
        assert_eq!(
            terms("Silben\u{AD}trennung می\u{200C}خواهم क्\u{200D}ष"),
            ["silbentrennung", "ميخواهم", "क्ष"]
        );
    }

    #[test]
    fn every_latin_letter_unicode_decomposes_folds_and_half_width_katakana_is_full_width() {
        // Transliterations, Welsh, Lithuanian, Sami, Livonian, Vietnamese: the letter under the
        // dot, line, ring or accent; capitals too, those the case tables leave aside among them.
        assert_eq!(
            terms("Muḥammad al-Ḵwārizmī Kṛṣṇa ṛṣi Ẃyth ŵ Ǧorđe ǩ Ȩ ȯ Ǵ TRƯỜNG Łódź"),
            [
                "muhammad", "al", "kwarizmi", "krsna", "rsi", "wyth", "w", "gorde", "k", "e", "o",
                "g", "truong", "lodz"
            ]
        );
        // Letters written as two, and ones with no decomposition, as before.
        assert_eq!(
            terms("Straße Æsir Œuvre þorn ðá Øre ıi"),
            ["strasse", "aesir", "oeuvre", "thorn", "da", "ore", "ii"]
        );
        // Capitals of Latin Extended-B: Azerbaijani, West African alphabets, digraphs.
        assert_eq!(
            terms("ƏLİ Ɓaƙi ƊAN Ǆ ǅ Ⱥ Ǽ ǯ ſ"),
            ["əli", "ɓaƙi", "ɗan", "ǆ", "ǆ", "ⱥ", "ae", "ʒ", "s"]
        );
        // Half-width katakana is the full-width; a sound mark typed after its kana is one
        // character with it; the pairs end where the text does, sound mark included.
        assert_eq!(terms("ｶﾀｶﾅ"), ["カタ", "タカ", "カナ"]);
        // The last character of a run is a term of its own, as it counts in the run.
        assert_eq!(
            index_terms("ｶﾀｶﾅ ﾊﾞｽ"),
            ["カタ", "タカ", "カナ", "バス", "ナ", "ス"]
        );
        assert_eq!(terms("ﾃﾞｰﾀ ﾊﾟﾝ ｳﾞｧ"), ["デー", "ータ", "パン", "ヴァ"]);
        // A full-width kana keeps the marks typed after it as they were.
        assert_eq!(terms("ガﾞ"), ["ガ", "ﾞ"]);
        let tokens = tokenize("ﾃﾞｰﾀﾞ");
        assert_eq!(
            (tokens[1].term.as_str(), tokens[1].start, tokens[1].end),
            ("ーダ", 2, 5)
        );
        for (text, query) in [
            ("ｶﾀｶﾅのﾃﾞｰﾀ", "カタカナ データ"),
            ("カタカナ", "ｶﾀｶﾅ"),
            ("Kṛṣṇa", "krsna"),
        ] {
            let clauses = parse_query(query).unwrap();
            assert!(match_text(text, &clauses).is_some(), "{query} in {text}");
        }
    }

    #[test]
    fn full_width_forms_arabic_and_hebrew_marks_and_letter_variants_fold() {
        // What a Chinese or Japanese input method types is the ASCII word.
        assert_eq!(terms("ＯｐｅｎＡＩ ２０２４年"), ["openai", "2024", "年"]);
        assert_eq!(terms("GPT－４ｏ"), ["gpt", "4o"]);
        // Arabic without its vowel marks, tatweel or hamza; Persian yeh and keheh; Arabic-Indic
        // digits.
        assert_eq!(
            terms("شكراً جزيلاً أحمد إلى مدرسة كـتـاب کتاب فارسی ٢٠٢٤ ۱۴۰۳"),
            [
                "شكرا",
                "جزيلا",
                "احمد",
                "الي",
                "مدرسه",
                "كتاب",
                "كتاب",
                "فارسي",
                "2024",
                "1403"
            ]
        );
        // Hebrew without its points.
        assert_eq!(terms("שָׁלוֹם עוֹלָם"), ["שלום", "עולם"]);
        for (text, query) in [
            ("Ｃｌａｕｄｅ ３ is out", "claude 3"),
            ("claude 3 is out", "Ｃｌａｕｄｅ"),
            ("قال أحمد شكراً", "احمد شكرا"),
            ("שָׁלוֹם לכולם", "שלום"),
        ] {
            let clauses = parse_query(query).unwrap();
            assert!(match_text(text, &clauses).is_some(), "{query} in {text}");
        }
        // A mark starts no word and joins no two.
        assert_eq!(terms("\u{64E} a\u{5B8}b"), ["ab"]);
        // A letter with hamza is its letter, the hamza written apart or not; the Arabic letter
        // mark and the marks of Arabic Extended-A stay out of the word.
        assert_eq!(
            terms("مسؤول مسو\u{654}ول رئيس خانۀ خانه\u{654} \u{61C}٢٠٢٤ ٱلْحَمْدُ\u{8F0}"),
            ["مسوول", "مسوول", "رييس", "خانه", "خانه", "2024", "الحمد"]
        );
        // The quotes and star of input methods and phone keyboards are the query's own.
        for (query, plain) in [
            ("＂open ai＂", "\"open ai\""),
            ("“open ai”", "\"open ai\""),
            ("open＊", "open*"),
            // German, Polish and French quotes: the closing one of `„…“` opened a phrase that
            // ran to the end.
            ("„big grey“ elephant zoo", "\"big grey\" elephant zoo"),
            ("„big grey” elephant", "\"big grey\" elephant"),
            ("«big grey» elephant", "\"big grey\" elephant"),
        ] {
            assert_eq!(
                parse_query(query).unwrap(),
                parse_query(plain).unwrap(),
                "{query}"
            );
        }
    }

    #[test]
    fn owners_never_share_index_keys() {
        assert_eq!(owner_prefix(Some("ann")), "ann\0");
        assert_eq!(owner_prefix(None), "\0");
        // An owner with a NUL in it cannot make another owner's keys.
        assert_ne!(
            owner_prefix(Some("a\0b")),
            format!("{}b\0", owner_prefix(Some("a")))
        );
        assert!(!owner_prefix(Some("a\0b")).starts_with(&owner_prefix(Some("a"))));
        assert_ne!(owner_prefix(Some("a\u{1}0")), owner_prefix(Some("a\0")));
    }

    #[test]
    fn a_word_with_a_prefix_or_one_character_of_a_script_without_spaces_matches_in_order() {
        let found = |query: &str, text: &str| match_text(text, &parse_query(query).unwrap());
        for (query, yes, no) in [
            ("5月", "2024年5月の予定", "6月5日の予定"),
            ("\"5月3日\"", "5月3日に会議", "3月5日に会議"),
            ("3월", "3월 5일", "5월 3일"),
            ("gpt-4*", "gpt-4o is fast", "GPT costs 4 dollars"),
            ("v1.2*", "v1.2.3 is out", "v1 released, 2.0 next"),
            ("の5", "予定の5日", "5の予定"),
        ] {
            assert!(found(query, yes).is_some(), "{query} in {yes}");
            assert!(found(query, no).is_none(), "{query} not in {no}");
        }
        // The first match is the run's, from its first token to its last.
        let m = found("5月", "2024年5月の予定").unwrap();
        assert_eq!(m.first, (5, 8));
    }

    #[test]
    fn a_long_query_looks_up_its_longest_words_only() {
        let clauses = parse_query("the cat sat on the mat \"big grey\" elephant").unwrap();
        assert_eq!(
            looked_up(&clauses, 12),
            [0, 1, 2, 3, 4, 5, 6],
            "few terms: every clause"
        );
        // The longest words first, a phrase counting its terms: elephant, then "big grey".
        let two = looked_up(&clauses, 3);
        assert_eq!(
            two.iter().map(|&c| &clauses[c]).collect::<Vec<_>>(),
            [&clauses[5], &clauses[6]]
        );
        assert_eq!(looked_up(&clauses, 0), [6], "at least one");
        assert!(looked_up(&[], 12).is_empty());
    }

    #[test]
    fn queries_are_words_phrases_and_prefixes() {
        use Clause::*;
        assert_eq!(parse_query("  ").unwrap(), []);
        assert_eq!(
            parse_query("Hippo \"big grey\" ele*").unwrap(),
            [
                Term("hippo".into()),
                Phrase(vec!["big".into(), "grey".into()], vec![false]),
                Prefix("ele".into())
            ]
        );
        assert_eq!(parse_query("東京").unwrap(), [Term("東京".into())]);
        assert_eq!(
            parse_query("東京の天気").unwrap(),
            [Phrase(
                vec!["東京".into(), "京の".into(), "の天".into(), "天気".into()],
                vec![true; 3]
            )]
        );
        assert_eq!(parse_query("東").unwrap(), [Prefix("東".into())]);
        assert_eq!(
            parse_query("e-mail").unwrap(),
            [Phrase(vec!["e".into(), "mail".into()], vec![false])]
        );
        assert_eq!(parse_query("cat cat").unwrap(), [Term("cat".into())]);
        assert_eq!(
            parse_query("gpt-4*").unwrap(),
            [Run(
                vec![Term("gpt".into()), Prefix("4".into())],
                vec![false]
            )]
        );
        assert_eq!(
            parse_query("3월").unwrap(),
            [Run(
                vec![Term("3".into()), Prefix("월".into())],
                vec![false]
            )]
        );
        let long = "a".repeat(MAX_QUERY + 1);
        assert_eq!(
            parse_query(&long).unwrap_err().code,
            SessionErrorCode::InvalidQuery
        );
        assert!(parse_query(&"a ".repeat(MAX_QUERY / 2)).is_ok());
    }

    #[test]
    fn matching_is_whole_words_phrases_in_order_and_prefixes() {
        let q = |s: &str| parse_query(s).unwrap();
        assert!(match_text("a hippopotamus", &q("hippo")).is_none());
        assert!(match_text("a hippopotamus", &q("hippo*")).is_some());
        assert!(match_text("the Hippo swims", &q("hippo")).is_some());
        assert!(match_text("grey big", &q("\"big grey\"")).is_none());
        assert!(match_text("a big grey one", &q("\"big grey\"")).is_some());
        assert!(
            match_text("big and grey", &q("big grey")).is_some(),
            "words are AND-ed in any order"
        );
        assert!(match_text("big only", &q("big grey")).is_none());
        assert!(match_text("今日の東京の天気は晴れ", &q("東京")).is_some());
        assert!(match_text("今日の東京の天気は晴れ", &q("東京の天気")).is_some());
        assert!(match_text("京都の天気", &q("東京")).is_none());
        // Two runs that share a character are not one run holding the query's.
        assert!(match_text("東京都を回った", &q("東京都")).is_some());
        assert!(match_text("東京、京都、大阪を回った", &q("東京都")).is_none());
        assert!(match_text("東京、京都、大阪を回った", &q("\"東京都\"")).is_none());
        assert!(match_text("กรุงเทพ", &q("กรุงเทพ")).is_some());
        assert!(match_text("東京", &q("東")).is_some());
        assert!(match_text("Un café crème", &q("cafe")).is_some());
        assert!(match_text("a cafe", &q("café")).is_some());
        // A word of several tokens with a prefix, or with one character of a script written
        // without spaces: each token matched by itself.
        assert!(match_text("GPT-4o is here", &q("gpt-4*")).is_some());
        assert!(match_text("v1.25 released", &q("v1.2*")).is_some());
        assert!(match_text("3월에 만나요", &q("3월")).is_some());
        assert!(match_text("5月の予定", &q("5月")).is_some());
        assert!(match_text("2024年的计划", &q("2024年")).is_some());
        assert!(match_text("6月の予定", &q("5月")).is_none());
        assert!(match_text("3월에 만나요", &q("\"3월\"")).is_some());
        let m = match_text("one two hippo three hippo", &q("hippo")).unwrap();
        assert_eq!(
            (m.length, m.frequencies.clone(), m.first),
            (5, vec![2], (8, 13))
        );
    }

    #[test]
    fn one_character_of_a_run_is_counted_once_per_mention() {
        let cat = parse_query("猫").unwrap();
        let count = |text: &str| match_text(text, &cat).map(|m| m.frequencies);
        // Inside a run (two pairs hold it), at its end, alone: once each.
        assert_eq!(count("那只猫很可爱"), Some(vec![1]));
        assert_eq!(count("我买了猫，她也买了猫"), Some(vec![2]));
        assert_eq!(count("猫"), Some(vec![1]));
        assert_eq!(count("猫很可爱"), Some(vec![1]));
        // A doubled character ending its run: two.
        assert_eq!(
            parse_query("妈")
                .ok()
                .and_then(|q| match_text("我的妈妈", &q))
                .map(|m| m.frequencies),
            Some(vec![2])
        );
        assert_eq!(count("没有"), None);
    }

    #[test]
    fn bm25_prefers_rare_terms_frequent_matches_and_short_items() {
        let m = |length, f: Vec<u32>| Match {
            length,
            frequencies: f,
            first: (0, 0),
        };
        let rare = score(&m(10, vec![1]), &[2], 1000, 10.0);
        let common = score(&m(10, vec![1]), &[500], 1000, 10.0);
        assert!(rare > common);
        assert!(score(&m(10, vec![3]), &[2], 1000, 10.0) > rare);
        assert!(score(&m(5, vec![1]), &[2], 1000, 10.0) > rare);
        assert!(score(&m(50, vec![1]), &[2], 1000, 10.0) < rare);
        assert!(common > 0.0);
    }

    #[test]
    fn snippets_show_the_hit_in_about_160_characters() {
        let text = format!(
            "{} the hippo is here {}",
            "word ".repeat(100),
            "more ".repeat(100)
        );
        let at = text.find("hippo").unwrap();
        let s = snippet(&text, (at, at + 5));
        assert!(s.contains("the hippo is here"), "{s}");
        assert!(s.starts_with('…') && s.ends_with('…'));
        assert!(s.chars().count() <= SNIPPET + 2, "{}", s.chars().count());
        assert_eq!(snippet("short   text\nhere", (0, 5)), "short text here");
        let end = "x ".repeat(200) + "end";
        let s = snippet(&end, (end.len() - 3, end.len()));
        assert!(s.ends_with("end") && s.starts_with('…'));
        // A `…` of the text is not the cut's mark: the space after it stays.
        assert_eq!(snippet("Wait… the hippo", (10, 15)), "Wait… the hippo");
        let cut = format!("{}Wait… the hippo", "word ".repeat(40));
        let at = cut.chars().count() - 5;
        let s = snippet(&cut, (at, at + 5));
        assert!(s.starts_with('…') && !s.starts_with("… "), "{s}");
        assert!(s.ends_with("Wait… the hippo"), "{s}");
    }

    #[test]
    fn snippets_cut_no_letter_from_its_accent_nor_an_emoji_or_a_flag_in_two() {
        let hit = |text: &str| {
            let chars: Vec<char> = text.chars().collect();
            let at = (0..chars.len())
                .find(|&i| chars[i..].starts_with(&['h', 'i', 'p', 'p', 'o']))
                .unwrap();
            snippet(text, (at, at + 5))
        };
        for (unit, first, last) in [
            ("a\u{301}", 'a', '\u{301}'),
            ("👨\u{200d}👩\u{200d}👧", '👨', '👧'),
            ("👍🏽", '👍', '🏽'),
            ("🇯🇵", '🇯', '🇵'),
            ("কি", 'ক', 'ি'),
            ("கொ", 'க', 'ொ'),
            // SARA AM, a spacing vowel sign no break comes before.
            ("ทำ", 'ท', 'ำ'),
            ("ຄຳ", 'ຄ', 'ຳ'),
        ] {
            for pad in 0..5 {
                let text = format!(
                    "{}{} hippo {}",
                    "x".repeat(pad),
                    unit.repeat(80),
                    unit.repeat(80)
                );
                let s: Vec<char> = hit(&text).chars().collect();
                assert_eq!((s[0], s[1]), ('…', first), "{unit:?} {pad}: {:?}", &s[..4]);
                let n = s.len();
                assert_eq!(
                    (s[n - 2], s[n - 1]),
                    (last, '…'),
                    "{unit:?} {pad}: {:?}",
                    &s[n - 4..]
                );
            }
        }
    }

    #[test]
    fn an_item_cut_at_its_terms_is_marked_and_iteration_marks_belong_to_their_run() {
        let long: String = (0..2100).map(|i| format!("w{i} ")).collect();
        let terms = index_terms(&long);
        assert_eq!(terms.len(), MAX_TERMS_PER_ITEM + 1);
        assert_eq!(terms.last().map(String::as_str), Some(PARTIAL));
        assert!(!index_terms("a short one").iter().any(|t| t == PARTIAL));
        // Exactly as many terms, then terms seen already: nothing lost, no mark.
        let full: String = (0..MAX_TERMS_PER_ITEM)
            .map(|i| format!("w{i} w0 "))
            .collect();
        assert!(!index_terms(&full).iter().any(|t| t == PARTIAL));
        let pairs: Vec<String> = tokenize("様々な").into_iter().map(|t| t.term).collect();
        assert_eq!(pairs, ["様々", "々な"]);
    }

    #[test]
    fn signs_and_units_are_no_letters_and_a_name_s_middle_dot_and_a_variation_selector_keep_a_run()
    {
        // A number next to a full-width sign, a unit or an enclosed letter is a number.
        assert_eq!(terms("￥5000 ￡20 5㎏ ㈱abc"), ["5000", "20", "5", "abc"]);
        // A byte order mark at the start of pasted text is no part of its first word.
        assert_eq!(terms("\u{FEFF}hello"), ["hello"]);
        // A name's middle dot: the run goes on, as typed without it.
        let pairs =
            |text: &str| -> Vec<String> { tokenize(text).into_iter().map(|t| t.term).collect() };
        assert_eq!(pairs("ジョン・スミス"), pairs("ジョンスミス"));
        assert_eq!(pairs("约翰·史密斯"), pairs("约翰史密斯"));
        assert_eq!(pairs("ｼﾞｮﾝ･ｽﾐｽ"), pairs("ジョンスミス"));
        // Not where a run does not go on: a dot at a run's end, or in a Latin word.
        assert_eq!(pairs("ジョン・ smith"), ["ジョ", "ョン", "smith"]);
        assert_eq!(pairs("col·lecció"), ["col", "leccio"]);
        // An ideograph's variation selector belongs to it: the run goes on, and the pair ends
        // after it.
        let tokens = tokenize("葛\u{E0100}飾区");
        let terms_of: Vec<&str> = tokens.iter().map(|t| t.term.as_str()).collect();
        assert_eq!(terms_of, ["葛飾", "飾区"]);
        assert_eq!((tokens[0].start, tokens[0].end), (0, 3));
        assert_eq!(pairs("葛\u{FE00}飾"), ["葛飾"]);
        // After a word's letter too.
        assert_eq!(pairs("a\u{FE0F}b c"), ["ab", "c"]);
    }

    #[test]
    fn a_kana_s_combining_sound_mark_is_one_character_with_it_as_nfc_composes_them() {
        let pairs =
            |text: &str| -> Vec<String> { tokenize(text).into_iter().map(|t| t.term).collect() };
        // Every kana NFC composes with U+3099 or U+309A (generated with Python's unicodedata),
        // in NFD: each is one character with its mark, and nothing else is.
        let nfc = "ゔがぎぐげござじずぜぞだぢづでどばぱびぴぶぷべぺぼぽゞヴガギグゲゴザジズゼゾダヂヅデドバパビピブプベペボポヷヸヹヺヾ";
        let mut composed = Vec::new();
        for base in ('\u{3041}'..='\u{30FF}').filter(|c| is_unspaced(*c)) {
            for mark in ['\u{3099}', '\u{309A}'] {
                composed.extend(voiced(base, mark));
            }
        }
        assert_eq!(composed.iter().collect::<String>(), nfc);
        // The same in NFD (from Python's unicodedata too).
        let nfd: Vec<char> = "う\u{3099}か\u{3099}き\u{3099}く\u{3099}け\u{3099}こ\u{3099}さ\u{3099}し\u{3099}す\u{3099}せ\u{3099}そ\u{3099}た\u{3099}ち\u{3099}つ\u{3099}て\u{3099}と\u{3099}は\u{3099}は\u{309A}ひ\u{3099}ひ\u{309A}ふ\u{3099}ふ\u{309A}へ\u{3099}へ\u{309A}ほ\u{3099}ほ\u{309A}ゝ\u{3099}ウ\u{3099}カ\u{3099}キ\u{3099}ク\u{3099}ケ\u{3099}コ\u{3099}サ\u{3099}シ\u{3099}ス\u{3099}セ\u{3099}ソ\u{3099}タ\u{3099}チ\u{3099}ツ\u{3099}テ\u{3099}ト\u{3099}ハ\u{3099}ハ\u{309A}ヒ\u{3099}ヒ\u{309A}フ\u{3099}フ\u{309A}ヘ\u{3099}ヘ\u{309A}ホ\u{3099}ホ\u{309A}ワ\u{3099}ヰ\u{3099}ヱ\u{3099}ヲ\u{3099}ヽ\u{3099}".chars().collect();
        for (c, nfd) in nfc.chars().zip(nfd.chunks(2)) {
            let nfd: String = nfd.iter().collect();
            assert_eq!(
                pairs(&format!("{nfd}の")),
                pairs(&format!("{c}の")),
                "{nfd:?}"
            );
        }
        assert_eq!(pairs("ヘ\u{309A}ーシ\u{3099}"), ["ペー", "ージ"]);
        // A mark NFC would not compose stays out of the term, and the run goes on; so does a
        // combining accent over an ideograph.
        assert_eq!(pairs("あ\u{3099}い ガ\u{3099}イ"), ["あい", "ガイ"]);
        assert_eq!(pairs("東\u{301}京"), ["東京"]);
        // The pair ends after its mark; a mark outside a run is dropped.
        let tokens = tokenize("は\u{3099}か");
        assert_eq!(
            (tokens[0].term.as_str(), tokens[0].start, tokens[0].end),
            ("ばか", 0, 3)
        );
        assert_eq!(pairs("a\u{3099}b"), ["ab"]);
        // A snippet does not cut a kana from its mark.
        assert!(inside_grapheme(&['は', '\u{3099}'], 1));
    }

    #[test]
    fn hangul_and_cyrillic_in_nfd_are_the_letters_nfc_writes() {
        let pairs =
            |text: &str| -> Vec<String> { tokenize(text).into_iter().map(|t| t.term).collect() };
        // 한국어 in NFD (leading consonant, vowel, final consonant), and a syllable typed whole
        // with a final consonant after it.
        let nfd = "\u{1112}\u{1161}\u{11AB}\u{1100}\u{116E}\u{11A8}\u{110B}\u{1165}";
        assert_eq!(pairs(nfd), pairs("한국어"));
        assert_eq!(pairs("하\u{11AB}국"), pairs("한국"));
        let tokens = tokenize(nfd);
        assert_eq!((tokens[0].start, tokens[0].end), (0, 6));
        // A syllable with a final consonant takes no other; a vowel alone stays a jamo.
        assert_eq!(pairs("한\u{11AB}"), ["한\u{11AB}"]);
        assert_eq!(pairs("\u{1161}\u{1161}"), ["\u{1161}\u{1161}"]);
        // Every Cyrillic letter NFC composes, in NFD (from Python's unicodedata), upper case too.
        let nfc = "йѐёѓїќѝўѷӂӑӓӗӛӝӟӣӥӧӫӭӯӱӳӵӹ";
        let nfd = "и\u{306}е\u{300}е\u{308}г\u{301}і\u{308}к\u{301}и\u{300}у\u{306}ѵ\u{30F}ж\u{306}а\u{306}а\u{308}е\u{306}ә\u{308}ж\u{308}з\u{308}и\u{304}и\u{308}о\u{308}ө\u{308}э\u{308}у\u{304}у\u{308}у\u{30B}ч\u{308}ы\u{308}";
        assert_eq!(terms(nfd), [nfc]);
        assert_eq!(terms(&nfd.to_uppercase()), [nfc]);
        assert_eq!(terms("Мои\u{306} йогурт МОЙ"), ["мой", "йогурт", "мой"]);
        // A stress mark, which NFC writes apart, is dropped as before; and so is a mark after a
        // letter it does not compose with.
        assert_eq!(terms("моло\u{301}ко и\u{301}"), ["молоко", "и"]);
        // U+0340 and U+0341 are the grave and acute NFC writes them as.
        assert_eq!(terms("е\u{340} Г\u{341}"), ["ѐ", "ѓ"]);
        // A snippet does not cut a syllable written as jamo.
        assert!(inside_grapheme(&['\u{1112}', '\u{1161}', '\u{11AB}'], 1));
        assert!(inside_grapheme(&['\u{1112}', '\u{1161}', '\u{11AB}'], 2));
    }

    #[test]
    fn a_middle_dot_after_a_half_width_sound_mark_keeps_the_run() {
        let pairs =
            |text: &str| -> Vec<String> { tokenize(text).into_iter().map(|t| t.term).collect() };
        assert_eq!(pairs("ﾌﾞﾗｯﾄﾞ･ﾋﾟｯﾄ"), pairs("ブラッドピット"));
        assert_eq!(pairs("ブラッド・ピット"), pairs("ブラッドピット"));
        // After an ideograph's variation selector or combining mark too.
        assert_eq!(pairs("葛\u{E0100}・飾"), ["葛飾"]);
        assert_eq!(pairs("東\u{301}·京"), ["東京"]);
        // Not after a mark outside a run.
        assert_eq!(pairs("a\u{301}・ス"), ["a", "ス"]);
    }

    #[test]
    fn every_capital_of_the_greek_and_cyrillic_blocks_is_lower_cased_as_unicode_has_it() {
        // As Unicode's case mapping (Rust's `to_lowercase`) has them (the module computes them,
        // carrying no case tables).
        for c in '\u{370}'..='\u{52F}' {
            let unicode: Vec<char> = c.to_lowercase().collect();
            if unicode.len() == 1 && unicode[0] != c {
                assert_eq!(lower(c), unicode[0], "{c} U+{:04X}", c as u32);
            }
        }
        assert_eq!(terms("ӁАЛ Ϙ"), ["ӂал", "ϙ"]);
    }
}
