//! The prolog's declarations held to the XML grammar: roxmltree reads the XML declaration and
//! processing instructions leniently (an unknown pseudo-attribute, a target run into its data),
//! where a conforming parser refuses the document.

const SPACE: &[u8] = b" \t\r\n";
/// Encoding names whose documents read the same as UTF-8.
const UTF8_NAMES: [&[u8]; 4] = [b"UTF-8", b"UTF8", b"US-ASCII", b"ASCII"];

fn spaces(s: &[u8]) -> usize {
    s.iter().take_while(|b| SPACE.contains(b)).count()
}

/// `S? = S?` then a quoted value; returns the value and the bytes after it.
fn assigned(s: &[u8]) -> Option<(&[u8], &[u8])> {
    let s = &s[spaces(s)..];
    let s = s.strip_prefix(b"=")?;
    let s = &s[spaces(s)..];
    let quote = *s.first().filter(|q| **q == b'"' || **q == b'\'')?;
    let end = s[1..].iter().position(|b| *b == quote)?;
    Some((&s[1..=end], &s[end + 2..]))
}

/// One `S name = "value"` of the declaration, if `name` comes next.
fn pseudo<'s>(s: &'s [u8], name: &str) -> Option<(&'s [u8], &'s [u8])> {
    let gap = spaces(s);
    let rest = s[gap..].strip_prefix(name.as_bytes()).filter(|_| gap > 0)?;
    assigned(rest)
}

/// `<?xml` VersionInfo EncodingDecl? SDDecl? S? `?>`, given what follows `<?xml`; the
/// declaration is malformed too when it names an encoding other than UTF-8 (or its ASCII subset).
fn declaration(s: &[u8]) -> Option<&[u8]> {
    let (version, mut s) = pseudo(s, "version")?;
    if !version.strip_prefix(b"1.")?.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if let Some((encoding, rest)) = pseudo(s, "encoding") {
        // The text is read as UTF-8: a document declaring another encoding would be misread.
        if !UTF8_NAMES.iter().any(|n| encoding.eq_ignore_ascii_case(n)) {
            return None;
        }
        s = rest;
    }
    if let Some((standalone, rest)) = pseudo(s, "standalone") {
        if standalone != b"yes" && standalone != b"no" {
            return None;
        }
        s = rest;
    }
    let s = &s[spaces(s)..];
    s.strip_prefix(b"?>")
}

/// An XML Name (non-ASCII characters taken as name characters, as roxmltree checks those).
fn is_name(name: &[u8]) -> bool {
    let start = |b: &u8| b.is_ascii_alphabetic() || b"_:".contains(b) || !b.is_ascii();
    let rest = |b: &u8| start(b) || b.is_ascii_digit() || b".-".contains(b);
    name.first().is_some_and(start) && name.iter().all(rest)
}

/// Checks the declarations before the root element; the reason when one is malformed.
pub(crate) fn check(text: &str) -> Result<(), &'static str> {
    let mut s = text.as_bytes();
    s = s.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(s);
    if let Some(rest) = s
        .strip_prefix(b"<?xml")
        .filter(|r| r.first().is_some_and(|b| SPACE.contains(b)))
    {
        s = declaration(rest).ok_or("malformed XML declaration")?;
    }
    loop {
        s = &s[spaces(s)..];
        if let Some(rest) = s.strip_prefix(b"<?") {
            let target = rest
                .iter()
                .take_while(|b| !SPACE.contains(b) && **b != b'?')
                .count();
            let name = &rest[..target];
            let named = is_name(name) && !name.eq_ignore_ascii_case(b"xml");
            let after = &rest[target..];
            if !named || !(after.starts_with(b"?>") || spaces(after) > 0) {
                return Err("malformed processing instruction");
            }
            let end =
                memchr::memmem::find(after, b"?>").ok_or("unterminated processing instruction")?;
            s = &after[end + 2..];
        } else if let Some(rest) = s.strip_prefix(b"<!--") {
            let end = memchr::memmem::find(rest, b"-->").ok_or("unterminated comment")?;
            s = &rest[end + 3..];
        } else {
            return Ok(());
        }
    }
}
