//! Server-sent events, as both OpenAI wire APIs stream them: an incremental parser that takes the
//! body in arbitrary chunks (a chunk may end mid-line or mid-character) and yields whole events.

/// One event: its `event:` name (if any) and its `data:` lines joined by `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub event: Option<String>,
    pub data: String,
}

/// The byte order mark a stream may start with, which is not part of its first line.
const BOM: &[u8] = b"\xEF\xBB\xBF";

#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes not yet forming a whole line (may end inside a UTF-8 sequence).
    pending: Vec<u8>,
    /// Whether the start of the stream (and a byte order mark there) is behind.
    started: bool,
    event: Option<String>,
    data: Vec<String>,
    has_data: bool,
}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds the next chunk of the body; returns the events it completed.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        self.pending.extend_from_slice(chunk);
        if !self.started {
            if self.pending.len() < BOM.len() && BOM.starts_with(&self.pending) {
                return Vec::new(); // perhaps the start of a byte order mark: wait for more
            }
            if self.pending.starts_with(BOM) {
                self.pending.drain(..BOM.len());
            }
            self.started = true;
        }
        let mut events = Vec::new();
        let mut start = 0;
        let mut i = 0;
        while i < self.pending.len() {
            let b = self.pending[i];
            if b == b'\n' || b == b'\r' {
                // A lone '\r' at the very end may be the first half of "\r\n": wait for more.
                if b == b'\r' && i + 1 == self.pending.len() {
                    break;
                }
                let line = String::from_utf8_lossy(&self.pending[start..i]).into_owned();
                if b == b'\r' && self.pending.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                if let Some(e) = self.line(&line) {
                    events.push(e);
                }
                start = i + 1;
            }
            i += 1;
        }
        self.pending.drain(..start);
        events
    }

    /// The end of the body: a last line ends with it (a `\r` kept waiting for a `\n` that never
    /// came included). An event without the blank line that closes it is dropped, as the SSE
    /// specification (and OpenAI's client) drop it: whether what came is a whole response is for
    /// the caller to tell.
    pub fn end(&mut self) -> Vec<SseEvent> {
        match self.pending.last() {
            None => Vec::new(),
            Some(last) => {
                // A `\r` kept waiting for a `\n` is a line end, now that nothing follows it.
                if *last == b'\r' {
                    self.pending.pop();
                }
                self.pending.push(b'\n');
                self.feed(b"")
            }
        }
    }

    fn line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            if !self.has_data {
                self.event = None;
                return None;
            }
            let event = SseEvent {
                event: self.event.take(),
                data: self.data.join("\n"),
            };
            self.data.clear();
            self.has_data = false;
            return Some(event);
        }
        if line.starts_with(':') {
            return None; // a comment (keep-alive)
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => {
                self.data.push(value.to_string());
                self.has_data = true;
            }
            "event" => self.event = Some(value.to_string()),
            _ => {} // id, retry and unknown fields do not matter here
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The events of a body given in `chunks`, and whether it ended in the middle of an event.
    fn all(chunks: &[&[u8]]) -> (Vec<SseEvent>, bool) {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for c in chunks {
            out.extend(p.feed(c));
        }
        out.extend(p.end());
        (out, p.has_data)
    }

    #[test]
    fn a_byte_order_mark_at_the_start_is_not_part_of_the_first_line() {
        let body = "\u{feff}data: Hello\n\ndata: world\n\n".as_bytes();
        for split in 0..5 {
            let (events, partial) = all(&[&body[..split], &body[split..]]);
            assert_eq!(
                events,
                [ev(None, "Hello"), ev(None, "world")],
                "split at {split}"
            );
            assert!(!partial);
        }
    }

    #[test]
    fn a_last_carriage_return_ends_its_line_when_the_body_ends() {
        let (events, partial) = all(&[b"data: a\r\rdata: b\r\r"]);
        assert_eq!(events, [ev(None, "a"), ev(None, "b")]);
        assert!(!partial);
    }

    #[test]
    fn an_event_without_its_blank_line_at_the_end_is_dropped() {
        let (events, partial) = all(&[b"data: a\n\ndata: [DONE]\n"]);
        assert_eq!(events, [ev(None, "a")]);
        assert!(partial);
        let (events, _) = all(&[b"data: a\n\ndata: [DONE]"]);
        assert_eq!(events, [ev(None, "a")]);
    }

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: event.map(str::to_string),
            data: data.to_string(),
        }
    }

    #[test]
    fn whole_events() {
        let (events, partial) =
            all(&[b"event: response.created\ndata: {\"a\":1}\n\ndata: [DONE]\n\n"]);
        assert_eq!(
            events,
            [
                ev(Some("response.created"), "{\"a\":1}"),
                ev(None, "[DONE]")
            ]
        );
        assert!(!partial);
    }

    #[test]
    fn chunks_split_anywhere_even_inside_a_character() {
        let body =
            "data: {\"delta\":\"こんにちは 👋\"}\r\n\r\n: keep-alive\n\ndata: x\ndata: y\n\n";
        let bytes = body.as_bytes();
        for split in 1..bytes.len() {
            let (events, partial) = all(&[&bytes[..split], &bytes[split..]]);
            assert_eq!(
                events,
                [ev(None, "{\"delta\":\"こんにちは 👋\"}"), ev(None, "x\ny")],
                "split at {split}"
            );
            assert!(!partial);
        }
        let one_by_one: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(all(&one_by_one).0.len(), 2);
    }

    #[test]
    fn a_cut_stream_is_noticed() {
        let (events, partial) = all(&[b"data: {\"a\":1}\n\ndata: {\"b\""]);
        assert_eq!(events, [ev(None, "{\"a\":1}")]);
        assert!(partial);
        let (_, partial) = all(&[b"data: {\"a\":1}\n"]);
        assert!(partial, "data without the blank line that ends the event");
    }

    #[test]
    fn field_without_space_and_unknown_fields() {
        let (events, _) = all(&[b"id: 7\nretry: 10\nevent:ping\ndata:1\n\n"]);
        assert_eq!(events, [ev(Some("ping"), "1")]);
    }
}
