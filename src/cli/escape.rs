//! Escaping text an asset controls (names, URIs, validator messages) for
//! the markup formats, so it can only ever be text:
//!
//! - [`markup`]: HTML and XML (the report card, compare's page, JUnit).
//!   `&`, `<`, `>` and both quotes become references (the apostrophe as the
//!   caller's format writes it), tab and line feed stay, every other
//!   control character is dropped (XML 1.0 forbids most of them).
//! - [`markdown`]: a Markdown line or table cell (the `markdown` format,
//!   the job summary, compare's Markdown): Markdown's punctuation is
//!   backslash-escaped, `<`, `>` and `&` become entities so no HTML gets
//!   through, `@` cannot mention anyone, line breaks become spaces.
//!
//! - [`terminal`]: text for a terminal (the table format): control
//!   characters, ESC above all, are shown as `\x1b`-style escapes, so a
//!   name cannot move the cursor, recolour, retitle or clear the terminal.
//!
//! Workflow commands (`--format github`) have their own rules, in
//! `annotations.rs`.

/// How the apostrophe is written: `&#39;` in HTML (which has no `&apos;`
/// before HTML5), `&apos;` in XML.
#[derive(Debug, Clone, Copy)]
pub enum Apostrophe {
    /// `&#39;`.
    Html,
    /// `&apos;`.
    Xml,
}

/// `s` as text inside an HTML or XML element or a quoted attribute.
pub fn markup(s: &str, apostrophe: Apostrophe) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str(match apostrophe {
                Apostrophe::Html => "&#39;",
                Apostrophe::Xml => "&apos;",
            }),
            '\n' | '\t' => out.push(ch),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// `s` as plain text in a Markdown line or table cell.
pub fn markdown(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '@' => out.push_str("@\u{200B}"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '(' | ')' | '#' | '!' | '|' | '~' | '{' | '}' | '$' | '"' | '\'' => {
                out.push('\\');
                out.push(ch);
            }
            '\n' | '\r' | '\t' => out.push(' '),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// `s` for a terminal: line feeds stay (a cell may wrap), every other
/// control character is written as an escape (`\x1b`, `\u{85}`).
pub fn terminal(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(|c| c.is_control() && c != '\n') {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for ch in s.chars() {
        match ch {
            '\n' => out.push(ch),
            c if (c as u32) < 0x80 && c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_leaves_no_tag_quote_or_control_character() {
        let s = "<script>\"a\" & 'b'</script>\u{1}\u{7f}\u{85}\n\t\r";
        assert_eq!(markup(s, Apostrophe::Html), "&lt;script&gt;&quot;a&quot; &amp; &#39;b&#39;&lt;/script&gt;\n\t");
        assert_eq!(markup(s, Apostrophe::Xml), "&lt;script&gt;&quot;a&quot; &amp; &apos;b&apos;&lt;/script&gt;\n\t");
    }

    #[test]
    fn terminal_text_holds_no_escape_sequence() {
        assert_eq!(terminal("plain\nline"), "plain\nline");
        assert_eq!(terminal("\u{1b}[31mred\u{1b}]0;t\u{7}\u{9b}2J\r"), "\\x1b[31mred\\x1b]0;t\\x07\\u{9b}2J\\x0d");
    }

    #[test]
    fn markdown_is_one_line_of_inert_text() {
        assert_eq!(
            markdown("# [x](http://e) <b>@team</b>\nnext|cell"),
            "\\# \\[x\\]\\(http://e\\) &lt;b&gt;@\u{200B}team&lt;/b&gt; next\\|cell"
        );
    }
}
