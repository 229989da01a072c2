//! Reading one element: its children in its own namespace, its attributes as the ADL schema types
//! them (xs:unsignedLong, xs:boolean), its text; each problem an [`AdlError`] naming the line.

use std::borrow::Cow;

use roxmltree::Node;

use super::{at, AdlError};

pub(crate) type El<'a> = Node<'a, 'a>;

/// The same namespace, by pointer first: roxmltree keeps one copy of each namespace URI.
pub(crate) fn same_namespace(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => std::ptr::eq(a, b) || a == b,
        (None, None) => true,
        _ => false,
    }
}

/// The children of `el` named `name` in `el`'s namespace: every element the reader follows is in
/// the namespace of its parent.
pub(crate) fn children<'a>(el: El<'a>, name: &'static str) -> impl Iterator<Item = El<'a>> {
    let namespace = el.tag_name().namespace();
    el.children().filter(move |c| {
        c.is_element()
            && c.tag_name().name() == name
            && same_namespace(c.tag_name().namespace(), namespace)
    })
}

/// The children named `name` of `el`, none when `el` is absent.
pub(crate) fn children_of<'a>(
    el: Option<El<'a>>,
    name: &'static str,
) -> impl Iterator<Item = El<'a>> {
    el.into_iter().flat_map(move |e| children(e, name))
}

/// The first child of `el` named `name`.
pub(crate) fn child<'a>(el: Option<El<'a>>, name: &'static str) -> Option<El<'a>> {
    children_of(el, name).next()
}

/// The local name of an element.
pub(crate) fn local<'a>(el: El<'a>) -> &'a str {
    el.tag_name().name()
}

/// The line of the element's start tag (counted only when an error needs it).
pub(crate) fn line(el: El<'_>) -> u32 {
    el.document().text_pos_at(el.range().start).row
}

pub(crate) fn req<'a>(el: El<'a>, attr: &str) -> Result<&'a str, AdlError> {
    el.attribute(attr).ok_or_else(|| {
        at(
            el,
            format!("<{}> lacks required attribute '{attr}'", local(el)),
        )
    })
}

/// An attribute as Python's `str(el.get(attr))` shows it in a message: `None` when absent.
pub(crate) fn shown(el: El<'_>, attr: &str) -> String {
    el.attribute(attr).unwrap_or("None").to_owned()
}

/// An index, size or count: every integer attribute of the ADL is an xs:unsignedLong.
pub(crate) fn int(el: El<'_>, attr: &str) -> Result<u64, AdlError> {
    let raw = req(el, attr)?;
    if !raw.is_empty() && raw.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(value) = raw.parse() {
            return Ok(value);
        }
    }
    let problem = match integer(raw) {
        Some(value) if value < 0 => "is negative (an xs:unsignedLong)",
        Some(value) => match u64::try_from(value) {
            Ok(value) => return Ok(value),
            Err(_) => "is out of range (an xs:unsignedLong)",
        },
        None => "is not an integer",
    };
    Err(at(el, format!("<{} {attr}='{raw}'> {problem}", local(el))))
}

pub(crate) fn opt_int(el: El<'_>, attr: &str) -> Result<Option<u64>, AdlError> {
    match el.attribute(attr) {
        Some(_) => int(el, attr).map(Some),
        None => Ok(None),
    }
}

pub(crate) fn boolean(el: El<'_>, attr: &str, default: bool) -> Result<bool, AdlError> {
    match el.attribute(attr) {
        None => Ok(default),
        Some("true" | "1") => Ok(true),
        Some("false" | "0") => Ok(false),
        Some(raw) => Err(at(
            el,
            format!("<{} {attr}='{raw}'> is not a boolean", local(el)),
        )),
    }
}

/// The element's text before its first child element (comments skipped), trimmed; "" when absent.
pub(crate) fn text<'a>(el: Option<El<'a>>) -> Cow<'a, str> {
    let Some(el) = el else {
        return Cow::Borrowed("");
    };
    let mut found: Cow<'a, str> = Cow::Borrowed("");
    for node in el.children() {
        if node.is_element() {
            break;
        }
        if let Some(part) = node.is_text().then(|| node.text()).flatten() {
            if found.is_empty() {
                found = Cow::Borrowed(part);
            } else {
                found.to_mut().push_str(part);
            }
        }
    }
    match found {
        Cow::Borrowed(s) => Cow::Borrowed(s.trim()),
        Cow::Owned(s) => Cow::Owned(s.trim().to_owned()),
    }
}

/// Python's `int(text)`: surrounding whitespace, a sign, ASCII digits with single underscores
/// between them (beyond 128 bits it saturates: still out of every range the ADL uses).
pub(crate) fn integer(text: &str) -> Option<i128> {
    let trimmed = text.trim();
    let (negative, digits) = match trimmed.as_bytes().first() {
        Some(b'-') => (true, &trimmed[1..]),
        Some(b'+') => (false, &trimmed[1..]),
        _ => (false, trimmed),
    };
    let digits = without_underscores(digits)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let value = digits.parse::<i128>().unwrap_or(i128::MAX);
    Some(if negative { -value } else { value })
}

/// A signed integer as Python's `int(text)` reads it, within 64 bits.
pub(crate) fn signed(text: &str) -> Option<i64> {
    integer(text).and_then(|v| i64::try_from(v).ok())
}

/// Python's `float(text)`: Rust's reading plus surrounding whitespace and digit underscores.
pub(crate) fn float(text: &str) -> Option<f64> {
    without_underscores(text.trim())?.parse().ok()
}

/// The text with its underscores removed, if each sits between two ASCII digits (Python's rule).
fn without_underscores(text: &str) -> Option<Cow<'_, str>> {
    if !text.contains('_') {
        return Some(Cow::Borrowed(text));
    }
    let bytes = text.as_bytes();
    let between_digits = |i: usize| {
        i > 0 && bytes[i - 1].is_ascii_digit() && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)
    };
    let all_between = bytes
        .iter()
        .enumerate()
        .all(|(i, &b)| b != b'_' || between_digits(i));
    all_between.then(|| Cow::Owned(text.replace('_', "")))
}
