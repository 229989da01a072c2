//! A one-line XML writer that gives the bytes lxml (libxml2) serialises for the same tree.
//!
//! libxml2's rules, as `etree.tostring(root, encoding="unicode")` applies them: no declaration;
//! an element without children or text self-closes (`<a/>`), one whose text was set, even to
//! "", does not (`<a></a>`); attribute values escape `& < > "` and write tab, newline and
//! carriage return as `&#9;`, `&#10;`, `&#13;`; text escapes `& < >` and carriage return only;
//! everything else (non-ASCII included) is written as is. lxml refuses strings XML 1.0 cannot
//! hold (C0 controls other than tab, newline, carriage return; U+FFFE, U+FFFF), and so does this.

use super::AadlError;

/// What a byte of a string needs: nothing (`COPY`, nearly all of them), an entity, or a look
/// at the character it starts (refused C0 controls; 0xEF, which may start U+FFFE or U+FFFF).
const COPY: u8 = 0;
const ENTITY: u8 = 1;
const CHECK: u8 = 2;

const fn classes(attribute: bool) -> [u8; 256] {
    let mut t = [COPY; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = CHECK;
        b += 1;
    }
    t[b'&' as usize] = ENTITY;
    t[b'<' as usize] = ENTITY;
    t[b'>' as usize] = ENTITY;
    t[b'\r' as usize] = ENTITY;
    if attribute {
        t[b'"' as usize] = ENTITY;
        t[b'\t' as usize] = ENTITY;
        t[b'\n' as usize] = ENTITY;
    } else {
        t[b'\t' as usize] = COPY;
        t[b'\n' as usize] = COPY;
    }
    t[0xEF] = CHECK;
    t
}

static ATTRIBUTE: [u8; 256] = classes(true);
static TEXT: [u8; 256] = classes(false);

fn entity(b: u8) -> &'static str {
    match b {
        b'&' => "&amp;",
        b'<' => "&lt;",
        b'>' => "&gt;",
        b'"' => "&quot;",
        b'\t' => "&#9;",
        b'\n' => "&#10;",
        _ => "&#13;",
    }
}

fn escape(out: &mut String, value: &str, classes: &[u8; 256]) -> Result<(), AadlError> {
    let bytes = value.as_bytes();
    let Some(first) = bytes.iter().position(|&b| classes[b as usize] != COPY) else {
        out.push_str(value);
        return Ok(());
    };
    let mut copied = 0;
    for (at, &b) in bytes.iter().enumerate().skip(first) {
        match classes[b as usize] {
            COPY => {}
            ENTITY => {
                out.push_str(&value[copied..at]);
                out.push_str(entity(b));
                copied = at + 1;
            }
            // U+FFFE and U+FFFF are EF BF BE and EF BF BF; other 0xEF characters are fine
            _ if b == 0xEF
                && !(bytes.get(at + 1) == Some(&0xBF)
                    && matches!(bytes.get(at + 2), Some(0xBE | 0xBF))) => {}
            _ => return Err(AadlError::not_xml(value)),
        }
    }
    out.push_str(&value[copied..]);
    Ok(())
}

/// Whether XML 1.0 (and so lxml) can hold `c`.
pub fn is_xml_char(c: char) -> bool {
    !matches!(c, '\0'..='\u{8}' | '\u{b}' | '\u{c}' | '\u{e}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}')
}

/// Writes elements in document order; an element's start tag stays open (`<name attrs`) until
/// its first child or its end decides between `>` and `/>`.
#[derive(Default)]
pub struct Writer {
    out: String,
    open: Vec<&'static str>,
    unsealed: bool,
}

impl Writer {
    pub fn with_capacity(capacity: usize) -> Self {
        Writer {
            out: String::with_capacity(capacity),
            ..Writer::default()
        }
    }

    fn seal(&mut self) {
        if self.unsealed {
            self.out.push('>');
            self.unsealed = false;
        }
    }

    /// `<name`: attributes follow, then children or `end`.
    pub fn start(&mut self, name: &'static str) -> &mut Self {
        self.seal();
        self.out.push('<');
        self.out.push_str(name);
        self.open.push(name);
        self.unsealed = true;
        self
    }

    /// Attributes already in their serialised form (namespace declarations).
    pub fn raw_attributes(&mut self, text: &str) -> &mut Self {
        self.out.push_str(text);
        self
    }

    /// Elements already serialised by another writer, as content of the open element.
    pub fn fragment(&mut self, xml: &str) -> &mut Self {
        self.seal();
        self.out.push_str(xml);
        self
    }

    pub fn attr(&mut self, key: &str, value: impl AsRef<str>) -> Result<&mut Self, AadlError> {
        self.out.push(' ');
        self.out.push_str(key);
        self.out.push_str("=\"");
        escape(&mut self.out, value.as_ref(), &ATTRIBUTE)?;
        self.out.push('"');
        Ok(self)
    }

    pub fn int(&mut self, key: &str, value: i64) -> &mut Self {
        self.out.push(' ');
        self.out.push_str(key);
        self.out.push_str("=\"");
        push_int(&mut self.out, value);
        self.out.push('"');
        self
    }

    pub fn flag(&mut self, key: &str, value: bool) -> &mut Self {
        self.out.push(' ');
        self.out.push_str(key);
        self.out
            .push_str(if value { "=\"true\"" } else { "=\"false\"" });
        self
    }

    /// Closes the innermost open element: `/>` when nothing was written inside it.
    pub fn end(&mut self) -> &mut Self {
        let name = self.open.pop().expect("end() matches a start()");
        if self.unsealed {
            self.out.push_str("/>");
            self.unsealed = false;
        } else {
            self.out.push_str("</");
            self.out.push_str(name);
            self.out.push('>');
        }
        self
    }

    /// Text content of the open element (set, even to "", it keeps the element from
    /// self-closing).
    pub fn text(&mut self, text: impl AsRef<str>) -> Result<&mut Self, AadlError> {
        self.seal();
        escape(&mut self.out, text.as_ref(), &TEXT)?;
        Ok(self)
    }

    /// An element holding only `text`.
    pub fn text_element(
        &mut self,
        name: &'static str,
        text: impl AsRef<str>,
    ) -> Result<&mut Self, AadlError> {
        Ok(self.start(name).text(text)?.end())
    }

    /// An element holding only a number as its text.
    pub fn int_element(&mut self, name: &'static str, value: i64) -> &mut Self {
        self.start(name).seal();
        push_int(&mut self.out, value);
        self.end()
    }

    pub fn finish(self) -> String {
        debug_assert!(self.open.is_empty(), "unclosed elements: {:?}", self.open);
        self.out
    }
}

/// `str(value)` of a Python int.
pub fn push_int(out: &mut String, value: i64) {
    let mut buf = [0u8; 20];
    let mut at = buf.len();
    let mut n = value.unsigned_abs();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if value < 0 {
        out.push('-');
    }
    // only ASCII digits were written
    out.push_str(std::str::from_utf8(&buf[at..]).unwrap_or_default());
}

/// `repr(value)` of a Python float: the shortest digits that round-trip, in positional notation
/// for decimal exponents -4..=15 (with ".0" when integral), else `d.ddde+XX` / `de-XX`.
pub fn python_float_repr(value: f64) -> String {
    if value.is_nan() {
        return "nan".into();
    }
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.into();
    }
    // Rust's `{:e}` without a precision writes the shortest round-trip digits ("-1.25e-5"), but
    // where two such strings are equally near the value it may take either; Python's repr takes
    // the correctly rounded one (2**49 + 0.25 is "...312.2", not "...312.3"), as exact formatting
    // to the same number of digits does, unless that one does not read back as the value.
    let shortest = format!("{value:e}");
    let mantissa_digits = shortest
        .split_once('e')
        .map_or(1, |(m, _)| m.chars().filter(char::is_ascii_digit).count());
    let rounded = format!("{:.*e}", mantissa_digits - 1, value);
    let sci = if rounded.parse::<f64>() == Ok(value) {
        rounded
    } else {
        shortest
    };
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let mut out = String::from(sign);
    if !(-4..16).contains(&exponent) {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push_str(&format!(
            "e{}{:02}",
            if exponent < 0 { '-' } else { '+' },
            exponent.abs()
        ));
    } else if exponent < 0 {
        out.push_str("0.");
        out.push_str(&"0".repeat((-exponent - 1) as usize));
        out.push_str(&digits);
    } else {
        let point = exponent as usize + 1;
        if digits.len() > point {
            out.push_str(&digits[..point]);
            out.push('.');
            out.push_str(&digits[point..]);
        } else {
            out.push_str(&digits);
            out.push_str(&"0".repeat(point - digits.len()));
            out.push_str(".0");
        }
    }
    out
}
