//! Java-properties parser (the format of the per-job name table,
//! `/etc/config/job/operator_port_labels.properties`).
//!
//! Follows `java.util.Properties.load`: `#`/`!` comments, `=`, `:` or
//! whitespace separators, backslash continuations, `\t \n \r \f` and
//! `\uXXXX` escapes. Unlike Java it reports problems instead of guessing:
//! a malformed `\u` escape is always an error, and in strict mode so are a
//! key with no separator and a key given twice.

use std::borrow::Cow;
use std::fmt;

use rustc_hash::FxHashMap;

/// One problem found in the input, with the 1-based line it starts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// One key/value pair, with the line its logical line starts on. Keys and
/// values borrow from the input unless escapes or continuations changed them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry<'a> {
    pub key: Cow<'a, str>,
    pub value: Cow<'a, str>,
    pub line: usize,
}

fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | 0x0c)
}

fn trim_blanks(s: &str) -> &str {
    let n = s.bytes().take_while(|&b| is_blank(b)).count();
    &s[n..]
}

/// Yields logical lines: (first natural line number, text with the
/// continuation backslashes and the following leading blanks removed).
struct LogicalLines<'a> {
    rest: &'a str,
    line: usize,
}

impl<'a> LogicalLines<'a> {
    fn new(text: &'a str) -> Self {
        // A byte-order mark is not part of the first key.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        LogicalLines {
            rest: text,
            line: 0,
        }
    }

    /// Next natural line (terminated by \n, \r or \r\n), without terminator.
    fn natural(&mut self) -> Option<&'a str> {
        if self.rest.is_empty() {
            return None;
        }
        self.line += 1;
        let bytes = self.rest.as_bytes();
        let end = bytes
            .iter()
            .position(|&b| b == b'\n' || b == b'\r')
            .unwrap_or(bytes.len());
        let next = match bytes.get(end) {
            None => end,
            Some(b'\r') if bytes.get(end + 1) == Some(&b'\n') => end + 2,
            Some(_) => end + 1,
        };
        let line = &self.rest[..end];
        self.rest = &self.rest[next..];
        Some(line)
    }
}

/// True when `s` ends in an odd number of backslashes (a continuation).
fn continues(s: &str) -> bool {
    s.bytes().rev().take_while(|&b| b == b'\\').count() % 2 == 1
}

impl<'a> Iterator for LogicalLines<'a> {
    type Item = (usize, Cow<'a, str>);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let trimmed = trim_blanks(self.natural()?);
            if trimmed.is_empty() || trimmed.starts_with(['#', '!']) {
                continue;
            }
            let start = self.line;
            if !continues(trimmed) {
                return Some((start, Cow::Borrowed(trimmed)));
            }
            let mut logical = String::with_capacity(trimmed.len() * 2);
            let mut piece = trimmed;
            while continues(piece) {
                logical.push_str(&piece[..piece.len() - 1]);
                match self.natural() {
                    Some(more) => piece = trim_blanks(more),
                    None => {
                        piece = "";
                        break;
                    }
                }
            }
            logical.push_str(piece);
            return Some((start, Cow::Owned(logical)));
        }
    }
}

/// Splits a logical line into its raw (still escaped) key and value, and
/// whether a separator or a value was present.
fn split_key_value(logical: &str) -> (&str, &str, bool) {
    let bytes = logical.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'=' | b':' => return (&logical[..i], trim_blanks(&logical[i + 1..]), true),
            b if is_blank(b) => {
                let after = trim_blanks(&logical[i..]);
                let (value, explicit) = match after.strip_prefix(['=', ':']) {
                    Some(v) => (trim_blanks(v), true),
                    None => (after, !after.is_empty()),
                };
                return (&logical[..i], value, explicit);
            }
            _ => i += 1,
        }
    }
    (logical, "", false)
}

/// Resolves backslash escapes, borrowing when there are none.
fn unescape(raw: &str) -> Result<Cow<'_, str>, String> {
    if !raw.contains('\\') {
        return Ok(Cow::Borrowed(raw));
    }
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\x0c'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                let code = (hex.len() == 4)
                    .then(|| u32::from_str_radix(&hex, 16).ok())
                    .flatten()
                    .ok_or_else(|| format!("malformed \\uXXXX escape '\\u{hex}'"))?;
                push_code_unit(&mut out, code, &mut chars)?;
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    Ok(Cow::Owned(out))
}

/// Pushes a UTF-16 code unit, pairing a high surrogate with a following
/// `\uDC00..\uDFFF` escape as Java does.
fn push_code_unit(
    out: &mut String,
    code: u32,
    chars: &mut std::str::Chars<'_>,
) -> Result<(), String> {
    if let Some(c) = char::from_u32(code) {
        out.push(c);
        return Ok(());
    }
    let lone = || format!("unpaired surrogate '\\u{code:04X}'");
    if !(0xD800..0xDC00).contains(&code) {
        return Err(lone());
    }
    let rest = chars.as_str();
    let low = rest
        .strip_prefix("\\u")
        .and_then(|r| r.get(..4))
        .and_then(|h| u32::from_str_radix(h, 16).ok())
        .filter(|l| (0xDC00..0xE000).contains(l))
        .ok_or_else(lone)?;
    let combined = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
    out.push(char::from_u32(combined).ok_or_else(lone)?);
    *chars = rest[6..].chars();
    Ok(())
}

/// Key, value and separator presence of one logical line, owning the text
/// only when the line itself had to be assembled from continuations.
fn key_value<'a>(logical: Cow<'a, str>) -> Result<(Cow<'a, str>, Cow<'a, str>, bool), String> {
    match logical {
        Cow::Borrowed(text) => {
            let (key, value, separated) = split_key_value(text);
            Ok((unescape(key)?, unescape(value)?, separated))
        }
        Cow::Owned(text) => {
            let (key, value, separated) = split_key_value(&text);
            let owned = |s: Cow<'_, str>| Cow::Owned(s.into_owned());
            Ok((owned(unescape(key)?), owned(unescape(value)?), separated))
        }
    }
}

/// Parses `text`, returning the entries in file order, or every problem found.
///
/// In strict mode a key without separator or value and a repeated key are
/// errors; otherwise they behave as in Java (empty value; the last one wins).
pub fn parse(text: &str, strict: bool) -> Result<Vec<Entry<'_>>, Vec<LineError>> {
    let mut entries: Vec<Entry<'_>> = Vec::new();
    let mut errors = Vec::new();
    let mut seen: FxHashMap<Cow<'_, str>, usize> = FxHashMap::default();
    for (line, logical) in LogicalLines::new(text) {
        let (key, value, separated) = match key_value(logical) {
            Ok(parts) => parts,
            Err(message) => {
                errors.push(LineError { line, message });
                continue;
            }
        };
        if strict && !separated {
            errors.push(LineError {
                line,
                message: format!("key '{key}' has no '=' or ':' and no value"),
            });
            continue;
        }
        match seen.get(&key) {
            Some(&index) if strict => errors.push(LineError {
                line,
                message: format!(
                    "duplicate key '{key}' (first on line {})",
                    entries[index].line
                ),
            }),
            Some(&index) => entries[index] = Entry { key, value, line },
            None => {
                seen.insert(key.clone(), entries.len());
                entries.push(Entry { key, value, line });
            }
        }
    }
    if errors.is_empty() {
        Ok(entries)
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(text: &str) -> Vec<(String, String)> {
        parse(text, true)
            .unwrap()
            .into_iter()
            .map(|e| (e.key.into_owned(), e.value.into_owned()))
            .collect()
    }

    fn p(k: &str, v: &str) -> (String, String) {
        (k.to_owned(), v.to_owned())
    }

    #[test]
    fn name_table_lines() {
        let text = "#Operator port labels\n#Tue Mar 02 10:15:00 UTC 2021\n\
                    0.Sink.0=1.0@0\n0.Src.0=0.0@0\n";
        assert_eq!(
            pairs(text),
            vec![p("0.Sink.0", "1.0@0"), p("0.Src.0", "0.0@0")]
        );
    }

    #[test]
    fn separators_and_blanks() {
        let text = "a=1\nb : 2\n  c 3\nd\t=\t4\n!comment\n\n e:\n";
        assert_eq!(
            pairs(text),
            vec![
                p("a", "1"),
                p("b", "2"),
                p("c", "3"),
                p("d", "4"),
                p("e", "")
            ]
        );
    }

    #[test]
    fn escapes_and_unicode() {
        let text = "k\\=x\\:y\\ z = v\\tw\\u00e9\\\\\nsmile=\\uD83D\\uDE00\n";
        assert_eq!(
            pairs(text),
            vec![p("k=x:y z", "v\twé\\"), p("smile", "\u{1F600}")]
        );
    }

    #[test]
    fn continuation_lines() {
        let text = "fruits = apple, \\\n    banana, \\\r\n\tpear\nnext=1\r\nend=\\\\\n";
        assert_eq!(
            pairs(text),
            vec![
                p("fruits", "apple, banana, pear"),
                p("next", "1"),
                p("end", "\\")
            ]
        );
    }

    #[test]
    fn comment_lines_do_not_continue() {
        assert_eq!(pairs("# a comment \\\nk=v\n"), vec![p("k", "v")]);
    }

    #[test]
    fn errors_carry_line_numbers() {
        let text = "a=1\nb=\\u12\nc\na=2\nd=\\uD800x\n";
        let errors = parse(text, true).unwrap_err();
        let lines: Vec<usize> = errors.iter().map(|e| e.line).collect();
        assert_eq!(lines, vec![2, 3, 4, 5]);
        assert!(errors[0].message.contains("malformed"));
        assert!(errors[1].message.contains("no '='"));
        assert_eq!(errors[2].message, "duplicate key 'a' (first on line 1)");
        assert!(errors[3].message.contains("unpaired surrogate"));
    }

    #[test]
    fn lenient_mode_follows_java() {
        let entries = parse("a=1\nflag\na=2\n", false).unwrap();
        let got: Vec<(&str, &str)> = entries.iter().map(|e| (&*e.key, &*e.value)).collect();
        assert_eq!(got, vec![("a", "2"), ("flag", "")]);
    }
}
