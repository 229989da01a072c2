//! The per-job name table read straight into numbers: operator port label
//! `J.O.P` → PE port label `E.I@J`, as the runtime looks them up.
//!
//! Real tables are plain `key=value` lines of digits, so each line is first
//! tried on a byte-level fast path; a table with anything else (escapes,
//! continuations, unusual separators) goes through the full Java-properties
//! parser and then the label grammar, with the same results and errors.

use rustc_hash::FxHashMap;

use crate::properties::{self, LineError};

/// (job id, operator index, operator input port index).
pub type OperatorPort = (u64, u64, u64);
/// (PE id, PE input port id, job id).
pub type PePort = (u64, u64, u64);

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct NameTable {
    entries: Vec<(OperatorPort, PePort)>,
    index: FxHashMap<OperatorPort, usize>,
}

impl NameTable {
    /// A table from entries; a repeated operator port keeps its last PE port.
    pub fn from_entries(entries: impl IntoIterator<Item = (OperatorPort, PePort)>) -> Self {
        let mut table = NameTable::default();
        for (key, value) in entries {
            match table.index.get(&key) {
                Some(&i) => table.entries[i].1 = value,
                None => {
                    table.index.insert(key, table.entries.len());
                    table.entries.push((key, value));
                }
            }
        }
        table
    }

    pub fn get(&self, key: &OperatorPort) -> Option<PePort> {
        self.index.get(key).map(|&i| self.entries[i].1)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entries in file order.
    pub fn entries(&self) -> &[(OperatorPort, PePort)] {
        &self.entries
    }
}

/// A forward-only reader over the table's bytes for the fast path.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn skip_blanks(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | 0x0c)) {
            self.at += 1;
        }
    }

    fn eat(&mut self, wanted: u8) -> Option<()> {
        (self.peek() == Some(wanted)).then(|| self.at += 1)
    }

    /// 1 to 19 decimal digits (19 always fit in u64, so no overflow checks).
    fn number(&mut self) -> Option<u64> {
        let start = self.at;
        let mut value = 0u64;
        while let Some(digit) = self
            .peek()
            .map(|b| b.wrapping_sub(b'0'))
            .filter(|d| *d < 10)
        {
            if self.at - start == 19 {
                return None;
            }
            value = value * 10 + u64::from(digit);
            self.at += 1;
        }
        (self.at > start).then_some(value)
    }

    fn triple(&mut self, first: u8, second: u8) -> Option<(u64, u64, u64)> {
        let a = self.number()?;
        self.eat(first)?;
        let b = self.number()?;
        self.eat(second)?;
        Some((a, b, self.number()?))
    }

    /// One `J.O.P = E.I@J` line with optional blanks, up to and including its line end.
    fn entry(&mut self) -> Option<(OperatorPort, PePort)> {
        let key = self.triple(b'.', b'.')?;
        self.skip_blanks();
        match self.peek() {
            Some(b'=' | b':') => self.at += 1,
            _ => return None,
        }
        self.skip_blanks();
        let value = self.triple(b'.', b'@')?;
        self.skip_blanks();
        self.line_end()?;
        Some((key, value))
    }

    /// `\n`, `\r\n` or the end of the text.
    fn line_end(&mut self) -> Option<()> {
        match self.peek() {
            None => Some(()),
            Some(b'\n') => self.eat(b'\n'),
            Some(b'\r') => {
                self.at += 1;
                self.eat(b'\n')
            }
            Some(_) => None,
        }
    }

    /// Skips a comment line; None if it ends in a backslash (which Java would not continue,
    /// but leave such oddities to the full parser) or in a lone `\r`.
    fn comment(&mut self) -> Option<()> {
        let rest = &self.bytes[self.at..];
        let end = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
        if rest[..end].contains(&b'\r') && !rest[..end].ends_with(b"\r") {
            return None;
        }
        self.at += (end + 1).min(rest.len());
        Some(())
    }
}

/// The fast path: Some(table) when every line is a plain entry, comment or blank
/// and no key repeats; None sends the text to the full parser.
fn parse_fast(text: &str) -> Option<NameTable> {
    let bytes = text.as_bytes();
    let lines = memchr::memchr_iter(b'\n', bytes).count() + 1;
    let mut table = NameTable {
        entries: Vec::with_capacity(lines),
        index: FxHashMap::with_capacity_and_hasher(lines, Default::default()),
    };
    let mut cursor = Cursor { bytes, at: 0 };
    while cursor.at < bytes.len() {
        cursor.skip_blanks();
        match cursor.peek()? {
            b'#' | b'!' => cursor.comment()?,
            b'\n' | b'\r' => cursor.line_end()?,
            _ => {
                let (key, value) = cursor.entry()?;
                if table.index.insert(key, table.entries.len()).is_some() {
                    return None;
                }
                table.entries.push((key, value));
            }
        }
    }
    Some(table)
}

fn single(text: &str, first: u8, second: u8) -> Option<(u64, u64, u64)> {
    let mut cursor = Cursor {
        bytes: text.as_bytes(),
        at: 0,
    };
    let parsed = cursor.triple(first, second)?;
    (cursor.at == text.len()).then_some(parsed)
}

fn operator_port(text: &str) -> Option<OperatorPort> {
    single(text, b'.', b'.')
}

fn pe_port(text: &str) -> Option<PePort> {
    single(text, b'.', b'@')
}

/// Parses a name table, reporting every bad line with its number.
pub fn parse(text: &str) -> Result<NameTable, Vec<LineError>> {
    if let Some(table) = parse_fast(text) {
        return Ok(table);
    }
    // Syntax problems (duplicates, missing separators) and label problems are all reported:
    // the strict pass finds the former, the lenient pass yields entries to check for the latter.
    let mut errors = properties::parse(text, true).err().unwrap_or_default();
    let entries = match properties::parse(text, false) {
        Ok(entries) => entries,
        Err(_) => return Err(errors),
    };
    let mut parsed = Vec::with_capacity(entries.len());
    for entry in entries {
        match (operator_port(&entry.key), pe_port(&entry.value)) {
            (Some(key), Some(value)) => parsed.push((key, value)),
            (None, _) => errors.push(LineError {
                line: entry.line,
                message: format!("'{}' is not an operator port label (J.O.P)", entry.key),
            }),
            (_, None) => errors.push(LineError {
                line: entry.line,
                message: format!("'{}' is not a PE port label (E.I@J)", entry.value),
            }),
        }
    }
    if errors.is_empty() {
        return Ok(NameTable::from_entries(parsed));
    }
    errors.sort_by_key(|e| e.line);
    errors.dedup_by_key(|e| e.line);
    Err(errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC_TABLE: &str = "#Operator port labels\n#Tue Mar 02 10:15:00 UTC 2021\n\
                              7.4.0=2.0@7\n7.2.0=1.0@7\n7.3.0=1.1@7\n7.1.0=3.0@7\n";

    #[test]
    fn spec_example_takes_the_fast_path() {
        let table = parse_fast(SPEC_TABLE).unwrap();
        assert_eq!(table.len(), 4);
        assert_eq!(table.get(&(7, 2, 0)), Some((1, 0, 7)));
        assert_eq!(table.get(&(7, 3, 0)), Some((1, 1, 7)));
        assert_eq!(table.get(&(7, 9, 0)), None);
        assert_eq!(table.entries()[0], ((7, 4, 0), (2, 0, 7)));
    }

    #[test]
    fn unusual_but_valid_syntax_gives_the_same_table() {
        let odd = "# c\r\n  7.4.0 : 2.0@7\r\n7.2.0=\\\n   1.0@7\n7\\.3.0=1.1@7\n7.1.0 3.0@7";
        assert!(parse_fast(odd).is_none());
        let table = parse(odd).unwrap();
        assert_eq!(
            table.entries(),
            &[
                ((7, 4, 0), (2, 0, 7)),
                ((7, 2, 0), (1, 0, 7)),
                ((7, 3, 0), (1, 1, 7)),
                ((7, 1, 0), (3, 0, 7))
            ]
        );
    }

    #[test]
    fn bad_labels_and_duplicates_are_reported_by_line() {
        let errors = parse("1.2.3=4.5@1\nx.2.3=4.5@1\n1.2.4=4.5\n1.2.3=9.9@1\n").unwrap_err();
        let got: Vec<(usize, &str)> = errors
            .iter()
            .map(|e| (e.line, e.message.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (2, "'x.2.3' is not an operator port label (J.O.P)"),
                (3, "'4.5' is not a PE port label (E.I@J)"),
                (4, "duplicate key '1.2.3' (first on line 1)"),
            ]
        );
    }

    #[test]
    fn overflowing_numbers_are_not_labels() {
        let errors = parse("1.2.99999999999999999999999=1.0@1\n").unwrap_err();
        assert_eq!(errors[0].line, 1);
    }

    #[test]
    fn empty_table() {
        assert!(parse("#Operator port labels\n\n").unwrap().is_empty());
    }
}
