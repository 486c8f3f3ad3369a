//! Lines of bounded length from an untrusted reader.
//!
//! `BufRead::read_until` keeps a whole line in memory however long it is,
//! so one endless line exhausts memory. [`read_line`] keeps at most `max`
//! bytes of a line: the rest of a longer line is read and dropped as it
//! arrives, and the next call starts at the line after it. Memory is the
//! bound plus the reader's own buffer.
//!
//! This file depends on nothing but `std`, so the fuzz targets include it
//! as it is.

use std::io::{self, BufRead};

/// What [`read_line`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line {
    /// The input has ended: no byte was left.
    End,
    /// A line of at most `max` bytes is in the buffer, without its `\n`.
    /// The last line of the input may lack the `\n`.
    Complete,
    /// A line longer than `max` bytes: its `len` bytes (without the `\n`)
    /// were read and dropped, and the buffer is empty.
    TooLong { len: u64 },
}

/// Reads the next line of `input` into `line` (cleared first), keeping at
/// most `max` bytes of it.
pub fn read_line(input: &mut impl BufRead, line: &mut Vec<u8>, max: usize) -> io::Result<Line> {
    line.clear();
    let mut len: u64 = 0;
    let mut too_long = false;
    let mut read_any = false;
    loop {
        let available = match input.fill_buf() {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            break;
        }
        read_any = true;
        let newline = available.iter().position(|&b| b == b'\n');
        let part = &available[..newline.unwrap_or(available.len())];
        len += part.len() as u64;
        if !too_long {
            if line.len() + part.len() > max {
                too_long = true;
                line.clear();
                line.shrink_to(max);
            } else {
                line.extend_from_slice(part);
            }
        }
        let used = part.len() + usize::from(newline.is_some());
        input.consume(used);
        if newline.is_some() {
            break;
        }
    }
    Ok(match (read_any, too_long) {
        (false, _) => Line::End,
        (true, false) => Line::Complete,
        (true, true) => Line::TooLong { len },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufReader, Read};

    fn all_lines(input: &[u8], max: usize, reader_capacity: usize) -> Vec<(Line, Vec<u8>)> {
        let mut reader = BufReader::with_capacity(reader_capacity, input);
        let mut line = Vec::new();
        let mut out = Vec::new();
        loop {
            let got = read_line(&mut reader, &mut line, max).unwrap();
            if got == Line::End {
                return out;
            }
            out.push((got, line.clone()));
        }
    }

    #[test]
    fn splits_lines_and_refuses_long_ones_in_any_buffering() {
        let input = b"short\n\nexactly8\nnine bytes\nlast";
        for capacity in [1, 2, 3, 5, 8, 64] {
            let got = all_lines(input, 8, capacity);
            let want = vec![
                (Line::Complete, b"short".to_vec()),
                (Line::Complete, Vec::new()),
                (Line::Complete, b"exactly8".to_vec()),
                (Line::TooLong { len: 10 }, Vec::new()),
                (Line::Complete, b"last".to_vec()),
            ];
            assert_eq!(got, want, "reader capacity {capacity}");
        }
        assert!(all_lines(b"", 8, 8).is_empty());
        assert_eq!(all_lines(b"\n", 8, 8), vec![(Line::Complete, Vec::new())]);
    }

    #[test]
    fn an_endless_line_is_never_held() {
        // 64 MiB of one line, then a short line: the buffer never holds
        // more than the bound.
        let long = io::repeat(b'7').take(64 << 20);
        let rest: &[u8] = b"\nnext\n";
        let mut reader = BufReader::new(long.chain(rest));
        let mut line = Vec::new();
        let got = read_line(&mut reader, &mut line, 4096).unwrap();
        assert_eq!(got, Line::TooLong { len: 64 << 20 });
        assert!(line.capacity() <= 4096, "capacity {}", line.capacity());
        assert_eq!(read_line(&mut reader, &mut line, 4096).unwrap(), Line::Complete);
        assert_eq!(line, b"next");
        assert_eq!(read_line(&mut reader, &mut line, 4096).unwrap(), Line::End);
    }
}
