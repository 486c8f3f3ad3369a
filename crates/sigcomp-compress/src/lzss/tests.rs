use super::format::*;
use super::match_finder::*;
use super::parse::*;
use super::*;
use crate::history::{common_prefix, hash3, NIL};

fn round_trip(window: &[u8], msg: &[u8], f: LzssFormat) -> usize {
    let mut bw = BitWriter::default();
    encode(window, msg, f, Effort::default(), &mut bw);
    let bytes = bw.finish();
    assert_eq!(decode(window, &bytes, f).as_deref(), Some(msg));
    bytes.len()
}

#[test]
fn round_trips() {
    let f = LzssFormat { offset_bits: 12, length_bits: 4 };
    let msg =
        b"INVITE sip:bob@example.com SIP/2.0\r\nVia: SIP/2.0/UDP pc33.example.com\r\nTo: Bob <sip:bob@example.com>\r\n";
    // Without a window only the repeats inside the message can be
    // copied ("example.com", "sip:bob@"): fewer bytes than all literals.
    let n = round_trip(&[], msg, f);
    assert!(n < (msg.len() * 9).div_ceil(8), "{n}");
    let window = vec![0u8; 100];
    round_trip(&window, msg, f);
    // A window that holds the message compresses it to almost nothing.
    let mut w = vec![0u8; 50];
    w.extend_from_slice(msg);
    let n = round_trip(&w, msg, LzssFormat { offset_bits: 12, length_bits: 8 });
    assert!(n <= 4, "{n}");
    round_trip(&[], &[7u8; 1000], LzssFormat { offset_bits: 9, length_bits: 6 });
}

#[test]
fn offsets_stay_within_the_window() {
    // The earlier copy lies beyond 2^9 bytes: it must not be used.
    let f = LzssFormat { offset_bits: 9, length_bits: 4 };
    let mut w = b"abcdefghijklmnop".to_vec();
    w.extend(std::iter::repeat_n(0u8, 600));
    round_trip(&w, b"abcdefghijklmnop", f);
}

// ---- Reference encoder: the fast paths must give the same tokens ----

/// The match search before the 8-byte extension: the same chain walk,
/// bytes compared one at a time.
fn reference_longest(f: &MatchFinder, pos: usize, reach: usize, max_len: usize, max_chain: usize) -> (usize, usize) {
    let data = &f.history.data;
    if pos + LzssFormat::MIN_MATCH > data.len() {
        return (0, 0);
    }
    let limit = (data.len() - pos).min(max_len);
    let oldest = pos.saturating_sub(reach);
    let (mut best_len, mut best_dist) = (0, 0);
    let mut cand = f.history.head[hash3(&data[pos..])];
    let mut last = pos;
    let mut steps = 0;
    while cand != NIL && steps < max_chain {
        let c = cand as usize;
        if c >= last || c < oldest {
            break;
        }
        last = c;
        steps += 1;
        let l = (0..limit).take_while(|&k| data[c + k] == data[pos + k]).count();
        if l > best_len {
            best_len = l;
            best_dist = pos - c;
        }
        cand = f.history.prev[c];
    }
    if best_len >= LzssFormat::MIN_MATCH {
        (best_len, best_dist)
    } else {
        (0, 0)
    }
}

/// What `find_matches` computes, with [`reference_longest`].
fn reference_matches(
    f: &mut MatchFinder,
    message: &[u8],
    buffer_size: usize,
    format: LzssFormat,
    effort: Effort,
) -> Vec<(usize, usize)> {
    let start = f.history.data.len();
    f.history.append(message);
    let reach = format.max_offset().min(buffer_size);
    let mut matches = Vec::new();
    for i in 0..message.len() {
        f.history.hash_up_to(start + i);
        matches.push(reference_longest(f, start + i, reach, format.max_match(), effort.max_chain));
    }
    f.history.hash_up_to(f.history.data.len());
    matches
}

/// Longest match by trying every earlier position within reach,
/// newest first (ties go to the nearest copy, as in the chain walk).
fn brute_force_matches(history: &[u8], message: &[u8], reach: usize, max_len: usize) -> Vec<(usize, usize)> {
    let data = [history, message].concat();
    let start = history.len();
    (start..data.len())
        .map(|pos| {
            let limit = (data.len() - pos).min(max_len);
            let mut best = (0, 0);
            for c in (pos.saturating_sub(reach)..pos).rev() {
                let l = (0..limit).take_while(|&k| data[c + k] == data[pos + k]).count();
                if l > best.0 {
                    best = (l, pos - c);
                }
            }
            if best.0 >= LzssFormat::MIN_MATCH {
                best
            } else {
                (0, 0)
            }
        })
        .collect()
}

/// The shortest-path parse trying every length `3..=len` at every
/// position; also returns the cost array.
fn reference_parse(
    message: &[u8],
    matches: &[(usize, usize)],
    format: LzssFormat,
) -> (Vec<(usize, usize)>, Vec<usize>) {
    let n = message.len();
    let mut cost = vec![0usize; n + 1];
    let mut choice = vec![0usize; n];
    for i in (0..n).rev() {
        cost[i] = LzssFormat::literal_bits(message[i]) + cost[i + 1];
        for l in LzssFormat::MIN_MATCH..=matches[i].0 {
            let c = format.match_bits(l) + cost[i + l];
            if c < cost[i] || (c == cost[i] && l > choice[i]) {
                cost[i] = c;
                choice[i] = l;
            }
        }
    }
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < n {
        let l = choice[i];
        tokens.push(if l == 0 { (0, 0) } else { (l, matches[i].1) });
        i += l.max(1);
    }
    (tokens, cost)
}

fn token_bits(message: &[u8], tokens: &[(usize, usize)], format: LzssFormat) -> usize {
    let mut i = 0;
    let mut bits = 0;
    for &(len, _) in tokens {
        if len == 0 {
            bits += LzssFormat::literal_bits(message[i]);
            i += 1;
        } else {
            bits += format.match_bits(len);
            i += len;
        }
    }
    assert_eq!(i, message.len());
    bits
}

/// Encodes `message` with both encoders on copies of `finder` (which
/// is left as the fast encoder leaves it) and asserts the same matches
/// and tokens. Returns whether the cost array rose somewhere (the
/// bucket-scanning fallback of `optimal_parse` was needed).
fn assert_same_as_reference(
    finder: &mut MatchFinder,
    message: &[u8],
    buffer_size: usize,
    format: LzssFormat,
    effort: Effort,
) -> bool {
    let mut reference = finder.clone();
    let want_matches = reference_matches(&mut reference, message, buffer_size, format, effort);
    let matches = finder.find_matches(message, buffer_size, format, effort);
    assert_eq!(matches, want_matches, "{format:?}");
    let (want, cost) = reference_parse(message, &matches, format);
    assert_eq!(optimal_parse(message, &matches, format), want, "{format:?}");
    assert_eq!(finder.history.data, reference.history.data);
    assert_eq!(finder.history.head, reference.history.head);
    assert_eq!(finder.history.prev, reference.history.prev);
    cost.windows(2).any(|w| w[0] < w[1])
}

fn corpus_flows() -> Vec<Vec<Vec<u8>>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus");
    let mut flows: Vec<_> = std::fs::read_dir(&dir)
        .expect("corpus")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    flows.sort();
    let flows: Vec<Vec<Vec<u8>>> = flows
        .iter()
        .map(|flow| {
            let mut names: Vec<_> = std::fs::read_dir(flow)
                .expect("flow")
                .filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "sip"))
                .collect();
            names.sort();
            names.iter().map(|p| std::fs::read(p).expect("message")).collect()
        })
        .collect();
    assert!(flows.len() >= 8 && flows.iter().all(|f| !f.is_empty()), "corpus flows: {}", flows.len());
    flows
}

#[test]
fn fast_encoder_gives_the_reference_tokens_on_the_corpus() {
    // Every corpus flow played into one history (dictionary first, as
    // the compressor's window), for buffers of 512..16384 bytes (9..14
    // offset bits) and every look-ahead, greedy and optimal effort.
    let dict = sigcomp::dict::SIP_SDP;
    let mut rises = 0;
    let mut messages = 0;
    for flow in corpus_flows() {
        for (buffer, lookahead) in [(512, 18), (1024, 66), (4096, 258), (4096, 18), (16384, 258)] {
            let format = LzssFormat::for_buffer(buffer, lookahead).expect("format");
            for effort in [Effort::exhaustive(512, true), Effort::exhaustive(8, true)] {
                let mut finder = MatchFinder::default();
                finder.prepare(&dict[dict.len().saturating_sub(buffer)..]);
                for message in &flow {
                    rises += usize::from(assert_same_as_reference(&mut finder, message, buffer, format, effort));
                    messages += 1;
                }
            }
        }
    }
    // The fallback path (cost rising inside a bucket's range) was
    // exercised, not only the one-comparison path.
    assert!(rises > 0 && rises < messages, "{rises} of {messages}");
}

/// The history and its chains, links past the hashed positions left out.
fn chains_of(f: &MatchFinder) -> (&[u8], &[u32], &[u32], usize) {
    let h = &f.history;
    (&h.data, &h.head[..], &h.prev[..h.hashed], h.hashed)
}

#[test]
fn rollback_restores_the_history_and_its_chains() {
    // A trial encoding rolled back leaves the finder exactly as before;
    // the chosen trial re-added with append_hashed equals encoding it.
    let dict = sigcomp::dict::SIP_SDP;
    let format = LzssFormat::for_buffer(4096, 258).expect("format");
    for flow in corpus_flows().iter().take(4) {
        let mut finder = MatchFinder::default();
        finder.prepare(&dict[dict.len() - 4096..]);
        for (k, message) in flow.iter().enumerate() {
            let mark = finder.mark();
            let before = finder.clone();
            finder.append(&flow[k.saturating_sub(1)][..40]);
            let mut bw = BitWriter::default();
            finder.encode(message, 4096, format, Effort::default(), &mut bw);
            finder.rollback(mark);
            assert_eq!(chains_of(&finder), chains_of(&before));
            let mut encoded = finder.clone();
            encoded.encode(message, 4096, format, Effort::default(), &mut BitWriter::default());
            finder.append_hashed(message);
            assert_eq!(chains_of(&finder), chains_of(&encoded));
        }
    }
}

#[test]
fn nice_length_stops_only_at_long_genuine_matches() {
    // With a nice length each match is the exhaustive search's, or at
    // least nice_len long; every match is a genuine copy within reach.
    let dict = sigcomp::dict::SIP_SDP;
    let (buffer, lookahead) = (4096, 258);
    let format = LzssFormat::for_buffer(buffer, lookahead).expect("format");
    let reach = format.max_offset().min(buffer);
    let mut shortcuts = 0;
    for flow in corpus_flows() {
        for nice in [8, 32] {
            let effort = Effort { nice_len: nice, ..Effort::default() };
            let mut finder = MatchFinder::default();
            finder.prepare(&dict[dict.len() - buffer..]);
            for message in &flow {
                let start = finder.history.data.len();
                let mut exhaustive = finder.clone();
                let want = exhaustive.find_matches(message, buffer, format, Effort::exhaustive(512, true));
                let got = finder.find_matches(message, buffer, format, effort);
                for (i, (&(l, d), &(wl, _))) in got.iter().zip(&want).enumerate() {
                    assert!(l == wl || l >= nice, "position {i}: {l} vs {wl}");
                    shortcuts += usize::from(l != wl);
                    if l > 0 {
                        let p = start + i;
                        assert!(d >= 1 && d <= reach && d <= p, "distance {d}");
                        assert_eq!(finder.history.data[p - d..p - d + l], finder.history.data[p..p + l]);
                    }
                }
                let tokens = optimal_parse(message, &got, format);
                let mut bw = BitWriter::default();
                write_tokens(message, &tokens, format, &mut bw);
                let window = &exhaustive.history.data[start.saturating_sub(buffer)..start];
                assert_eq!(decode(window, &bw.finish(), format).as_deref(), Some(&message[..]));
            }
        }
    }
    assert!(shortcuts > 0, "the nice length never changed a match");
}

#[test]
fn unbounded_chains_find_the_longest_nearest_match() {
    // With no chain limit and a fresh finder (no stale links) the hash
    // chains must find exactly what trying every position finds, and
    // the parse must cost no more than the reference parse of those.
    let dict = sigcomp::dict::SIP_SDP;
    let effort = Effort::exhaustive(usize::MAX, true);
    for flow in corpus_flows().iter().take(3) {
        for (buffer, lookahead) in [(1024, 66), (4096, 258)] {
            let format = LzssFormat::for_buffer(buffer, lookahead).expect("format");
            let mut finder = MatchFinder::default();
            finder.prepare(&dict[dict.len() - buffer..]);
            for message in flow {
                let history = finder.history.data.clone();
                let want = brute_force_matches(&history, message, format.max_offset().min(buffer), format.max_match());
                let matches = finder.find_matches(message, buffer, format, effort);
                assert_eq!(matches, want);
                let tokens = optimal_parse(message, &matches, format);
                let (reference, cost) = reference_parse(message, &want, format);
                assert_eq!(tokens, reference);
                assert_eq!(token_bits(message, &tokens, format), cost[0]);
            }
        }
    }
}

#[test]
fn length_buckets_follow_the_length_code() {
    // optimal_parse relies on every length of a bucket costing the same.
    let mut next = LzssFormat::MIN_MATCH;
    for &(lo, hi) in &LENGTH_BUCKETS {
        assert_eq!(lo, next);
        let top = hi.min(258);
        assert!((lo..=top).all(|l| length_code(l).1 == length_code(lo).1), "{lo}..={hi}");
        next = hi.saturating_add(1);
    }
    assert_eq!(next, usize::MAX, "the last bucket is open-ended");
    assert!(length_code(6).1 < length_code(7).1 && length_code(22).1 < length_code(23).1);
}

#[test]
fn common_prefix_counts_equal_leading_bytes() {
    let a: Vec<u8> = (0..40).collect();
    for k in 0..=40 {
        let mut b = a.clone();
        if k < 40 {
            b[k] ^= 0x80;
        }
        for len in 0..=40 {
            assert_eq!(common_prefix(&a[..len], &b[..len]), k.min(len), "k {k} len {len}");
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..Default::default() })]
    /// Messages over a 2–4 byte alphabet: long matches, many ties and
    /// cost rises, so every branch of the fast parse is taken.
    #[test]
    fn fast_encoder_gives_the_reference_tokens_on_repetitive_bytes(
        alphabet in 2u8..5,
        window in proptest::collection::vec(0u8..4, 0..2000),
        message in proptest::collection::vec(0u8..4, 0..1500),
        offset_bits in 9u8..13,
        length_bits in proptest::sample::select(vec![4u8, 6, 8]),
        max_chain in proptest::sample::select(vec![1usize, 8, 512]),
    ) {
        let window: Vec<u8> = window.iter().map(|b| b % alphabet + b'a').collect();
        let message: Vec<u8> = message.iter().map(|b| b % alphabet + b'a').collect();
        let format = LzssFormat { offset_bits, length_bits };
        let effort = Effort::exhaustive(max_chain, true);
        let mut finder = MatchFinder::default();
        finder.prepare(&window);
        // An empty window: an unbounded linear history, as encode() takes it.
        let buffer = if window.is_empty() { usize::MAX } else { window.len() };
        assert_same_as_reference(&mut finder, &message, buffer, format, effort);
        // A second message against the grown history (chains kept).
        assert_same_as_reference(&mut finder, &message[message.len() / 2..], buffer, format, effort);
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..Default::default() })]
    /// The floor is never above the real token bytes, whatever the
    /// history: repetitive bytes (long matches), and the message itself
    /// in the window (the longest matches there are).
    #[test]
    fn min_token_bytes_is_a_lower_bound(
        alphabet in 2u8..200,
        window in proptest::collection::vec(proptest::num::u8::ANY, 0..3000),
        message in proptest::collection::vec(proptest::num::u8::ANY, 0..1500),
        offset_bits in 9u8..13,
        length_bits in proptest::sample::select(vec![4u8, 6, 8]),
        message_in_window in proptest::bool::ANY,
    ) {
        let message: Vec<u8> = message.iter().map(|b| b % alphabet).collect();
        let mut window: Vec<u8> = window.iter().map(|b| b % alphabet).collect();
        if message_in_window {
            window.extend_from_slice(&message);
        }
        let format = LzssFormat { offset_bits, length_bits };
        let mut out = BitWriter::default();
        encode(&window, &message, format, Effort::default(), &mut out);
        let tokens = out.finish();
        proptest::prop_assert!(format.min_token_bytes(message.len()) <= tokens.len());
    }
}

#[test]
fn min_token_bytes_is_tight_for_a_repeated_message() {
    // A message already in the window costs whole 258-byte matches:
    // 24 bits each with 12 offset bits, within a byte of the floor.
    let format = LzssFormat { offset_bits: 12, length_bits: 8 };
    let message: Vec<u8> = (0..1032u32).map(|i| (i * 7 % 251) as u8 & 0x7F).collect();
    let mut out = BitWriter::default();
    encode(&message, &message, format, Effort::default(), &mut out);
    let tokens = out.finish();
    let floor = format.min_token_bytes(message.len());
    assert_eq!(floor, 1032 * 24 / 258 / 8);
    assert!(floor <= tokens.len() && tokens.len() <= floor + 1, "floor {floor}, tokens {}", tokens.len());
}

#[test]
fn length_bits_from_lookahead() {
    assert_eq!(LzssFormat::length_bits_for(18), Some(4));
    assert_eq!(LzssFormat::length_bits_for(66), Some(6));
    assert_eq!(LzssFormat::length_bits_for(258), Some(8));
    assert_eq!(LzssFormat::length_bits_for(100), None);
}
