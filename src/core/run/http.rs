//! What a request header may hold. The browser's `Headers` throws on a name that is not an HTTP
//! token or a value with a line break, a NUL or a character past U+00FF; checking when the
//! runner is made turns that into an options error before any request is built.

/// Why `name` cannot be a header name, if it cannot.
pub fn header_name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("is empty");
    }
    let token = |c: char| {
        c.is_ascii_alphanumeric()
            || matches!(
                c,
                '!' | '#'
                    | '$'
                    | '%'
                    | '&'
                    | '\''
                    | '*'
                    | '+'
                    | '-'
                    | '.'
                    | '^'
                    | '_'
                    | '`'
                    | '|'
                    | '~'
            )
    };
    (!name.chars().all(token))
        .then_some("is not an HTTP header name (letters, digits and !#$%&'*+-.^_`|~ only)")
}

/// Why `value` cannot be a header value, if it cannot.
pub fn header_value_problem(value: &str) -> Option<&'static str> {
    if value.chars().any(|c| matches!(c, '\r' | '\n' | '\0')) {
        Some("holds a line break or a NUL character")
    } else if value.chars().any(|c| c as u32 > 0xFF) {
        Some("holds a character past U+00FF, which an HTTP header cannot carry")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_tokens() {
        assert_eq!(header_name_problem("x-request-id"), None);
        assert_eq!(header_name_problem("OpenAI-Organization"), None);
        assert!(header_name_problem("").is_some());
        assert!(header_name_problem("bad name").is_some());
        assert!(header_name_problem("a:b").is_some());
        assert!(header_name_problem("é").is_some());
    }

    #[test]
    fn values_fit_a_header() {
        assert_eq!(header_value_problem("Bearer sk-123"), None);
        assert_eq!(header_value_problem("café"), None, "Latin-1 is allowed");
        assert!(header_value_problem("a\r\nInjected: yes").is_some());
        assert!(header_value_problem("nul\0").is_some());
        assert!(header_value_problem("key—with a dash").is_some());
    }
}
