//! The most expensive UDVM cycles: `cargo bench -p sigcomp --bench worst_cycles`.
//!
//! RFC 3320 §8.6 bounds a message by the cycles it is charged, so what a
//! hostile message can cost an endpoint is the time of its dearest cycle
//! times its budget. Each bench is one message whose bytecode repeats one
//! instruction (most loop on themselves: an instruction whose jump target
//! is its own address) until its cycles run out, or a straight run of
//! instructions that ends the message; it reports nanoseconds per charged
//! cycle. Loops that read state run on an endpoint holding thousands of
//! states in thousands of compartments.
//!
//! Three loops are an adversary's at scale, on endpoints of their own:
//! STATE-ACCESS round-robin over 3,764 distinct empty or 1-byte states (as
//! many as fit, with their identifiers, in 64 KiB of UDVM memory) at an
//! endpoint storing 1,048,576 more (zero-length, about 1 GB of memory before the
//! store counted real bytes), and SHA-1 alternating 0- and 1-byte inputs
//! whose digest is written across the circular buffer's end.
//!
//! Two more are messages whose cost is in `Decompressor::accept`, the state
//! requests carried out after the message (a compartment holding 2048
//! states: four STATE-FREEs, and a creation evicting 938 of them), timed
//! from decompression to the end of `accept`.
//!
//! First a table (ns per cycle, fastest of 9 runs, measured with
//! `Instant`, and for messages of 40 ms or more on-CPU ns per cycle, the
//! median of the same runs' time on a CPU, from Linux's schedstat; about
//! 15 s) is printed, then
//! criterion measures each message with the cycles as its throughput
//! (elements/s = cycles/s). Criterion's options go after `--`
//! (`-- --warm-up-time 1 --measurement-time 2`, or a name filter);
//! `-- --table-only` prints the table alone.

// A setup failure here is a bug to see at once: unwrap panics with it.
#![allow(clippy::unwrap_used)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, Throughput};
use sigcomp::state::{Limits, State};
use sigcomp::udvm::op;
use sigcomp::wire::emit_bytecode_message;
use sigcomp::wire::emit_state_message;
use sigcomp::{CompartmentId, Decompressor, Params, StateId, Transport};

/// Where the bytecode is uploaded.
const CODE: u16 = 128;
/// Scratch memory the loops write to.
const SCRATCH: u16 = 4096;
/// States stored at the endpoint for the loops that read state.
const STORED_STATES: u64 = 4000;

/// Multitype operand (RFC 3320 §8.5 Figure 10), shortest form.
fn m(v: u16) -> Vec<u8> {
    match v {
        0..=63 => vec![v as u8],
        64..=8191 => vec![0xA0 | (v >> 8) as u8, v as u8],
        _ => vec![0x80, (v >> 8) as u8, v as u8],
    }
}

/// Multitype operand in its 3-byte form (for addresses computed from the
/// code's length).
fn fixed(v: u16) -> Vec<u8> {
    vec![0x80, (v >> 8) as u8, v as u8]
}

/// Literal operand (RFC 3320 §8.5 Figure 8).
fn lit(v: u16) -> Vec<u8> {
    match v {
        0..=127 => vec![v as u8],
        128..=16383 => vec![0x80 | (v >> 8) as u8, v as u8],
        _ => vec![0xC0, (v >> 8) as u8, v as u8],
    }
}

fn instr(opcode: u8, operands: &[Vec<u8>]) -> Vec<u8> {
    let mut v = vec![opcode];
    for o in operands {
        v.extend_from_slice(o);
    }
    v
}

fn end_message() -> Vec<u8> {
    instr(op::END_MESSAGE, &[m(0), m(0), m(0), m(0), m(0), m(0), m(0)])
}

/// `body` then a JUMP back to its start (at CODE).
fn looped(body: Vec<u8>) -> Vec<u8> {
    let mut code = body;
    let back = 0u16.wrapping_sub(code.len() as u16);
    code.extend(instr(op::JUMP, &[fixed(back)]));
    code
}

fn params() -> Params {
    Params { dms: 131072, sms: 131072, cpb: 128, version: 2 }
}

/// A decompressor holding `STORED_STATES` states, one per compartment,
/// and the states the loops read, which are returned.
struct Endpoint {
    d: Decompressor,
    /// An empty state whose instruction is CODE.
    empty: StateId,
    /// A 2000-byte state.
    large: StateId,
    /// Identifiers of states kept packed, one per compartment.
    packed: Vec<StateId>,
}

fn sip_text(i: u64, len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len + 100);
    let mut n = 0;
    while v.len() < len {
        v.extend_from_slice(
            format!("Via: SIP/2.0/UDP host{i}.example.com:5060;branch=z9hG4bK{i}x{n}\r\nCSeq: {n} INVITE\r\n")
                .as_bytes(),
        );
        n += 1;
    }
    v.truncate(len);
    v
}

fn endpoint() -> Endpoint {
    let mut d = Decompressor::new(params()).expect("valid parameters");
    let states = d.states_mut();
    for i in 0..STORED_STATES {
        let value: Vec<u8> = i.to_be_bytes().iter().copied().cycle().take(200).collect();
        states.create(CompartmentId(i), 0, 0, 6, &value, 1);
    }
    let created = |d: &mut Decompressor, c: u64, instruction: u16, value: &[u8]| match d.states_mut().create(
        CompartmentId(c),
        0,
        instruction,
        6,
        value,
        1,
    ) {
        sigcomp::state::CreateOutcome::Created(id) => id,
        o => panic!("{o:?}"),
    };
    let empty = created(&mut d, 1_000_000, CODE, &[]);
    let large = created(&mut d, 1_000_001, 0, &sip_text(0, 2000));
    let mut packed = Vec::new();
    for i in 0..100 {
        let c = 2_000_000 + i;
        packed.push(created(&mut d, c, 0, &sip_text(c, 4000)));
        assert!(d.states_mut().pack_compartment(CompartmentId(c)) > 0);
    }
    Endpoint { d, empty, large, packed }
}

/// The benched messages: name and message.
fn messages(e: &Endpoint) -> Vec<(&'static str, Vec<u8>)> {
    let mut out = Vec::new();
    let msg = |code: &[u8]| emit_bytecode_message(None, code, CODE, &[]).unwrap();
    // JUMP to itself: the cheapest cycle.
    out.push(("jump", msg(&instr(op::JUMP, &[m(0)]))));
    // COMPARE jumping to itself.
    out.push(("compare", msg(&instr(op::COMPARE, &[m(0), m(0), m(0), m(0), m(0)]))));
    // STATE-ACCESS of an empty state by a 6-byte or 20-byte identifier,
    // jumping to itself (the state's instruction): 1 cycle.
    for (name, len) in [("state_access_empty_id6", 6u16), ("state_access_empty_id20", 20)] {
        let code_at = |ids_at: u16| instr(op::STATE_ACCESS, &[fixed(ids_at), m(len), m(0), m(0), m(0), m(0)]);
        let mut code = code_at(CODE + code_at(0).len() as u16);
        code.extend_from_slice(&e.empty.0[..usize::from(len)]);
        out.push((name, msg(&code)));
    }
    // STATE-ACCESS of 1 byte of a 2000-byte state, then JUMP: 3 cycles.
    {
        let code_at =
            |ids_at: u16| looped(instr(op::STATE_ACCESS, &[fixed(ids_at), m(6), m(1999), m(1), fixed(SCRATCH), m(0)]));
        let ids_at = CODE + code_at(0).len() as u16;
        let mut code = code_at(ids_at);
        code.extend_from_slice(&e.large.0[..6]);
        out.push(("state_access_1_byte_of_2000", msg(&code)));
    }
    // One byte of each of 100 packed states, then END-MESSAGE.
    {
        let access = |at: u16| instr(op::STATE_ACCESS, &[fixed(at), m(6), m(0), m(1), fixed(SCRATCH), m(0)]);
        let ids_at = CODE + (access(0).len() * e.packed.len() + end_message().len()) as u16;
        let mut code = Vec::new();
        for i in 0..e.packed.len() {
            code.extend(access(ids_at + 6 * i as u16));
        }
        code.extend(end_message());
        for id in &e.packed {
            code.extend_from_slice(&id.0[..6]);
        }
        out.push(("state_access_100_packed", msg(&code)));
    }
    // CRC of 0 bytes, which never matches 0: jumps to itself, 1 cycle.
    out.push(("crc_0_bytes", msg(&instr(op::CRC, &[m(0), m(0), m(0), m(0)]))));
    // CRC of 1 byte: 2 cycles.
    out.push(("crc_1_byte", msg(&instr(op::CRC, &[m(0), m(SCRATCH), m(1), m(0)]))));
    // SHA-1 of 0 bytes, then JUMP: 2 cycles.
    out.push(("sha1_0_bytes", msg(&looped(instr(op::SHA_1, &[m(SCRATCH), m(0), m(SCRATCH)])))));
    out.push(("sha1_0_1_alternating_wrapped", sha1_alternating_wrapped()));
    // SHA-1 of 1 byte into itself (a new input each time), then JUMP: 3 cycles.
    out.push(("sha1_1_byte_fed_back", msg(&looped(instr(op::SHA_1, &[m(SCRATCH), m(1), m(SCRATCH)])))));
    // COPY of 0 and 1 bytes, then JUMP.
    out.push(("copy_0_bytes", msg(&looped(instr(op::COPY, &[m(SCRATCH), m(0), m(SCRATCH + 8)])))));
    out.push(("copy_1_byte", msg(&looped(instr(op::COPY, &[m(SCRATCH), m(1), m(SCRATCH + 8)])))));
    // OUTPUT of 0 bytes, then JUMP.
    out.push(("output_0_bytes", msg(&looped(instr(op::OUTPUT, &[m(SCRATCH), m(0)])))));
    // MEMSET of 0 bytes, then JUMP.
    out.push(("memset_0_bytes", msg(&looped(instr(op::MEMSET, &[m(SCRATCH), m(0), m(0), m(0)])))));
    // MULTILOAD of 1 and of 60 words, then JUMP.
    out.push(("multiload_1", msg(&looped(instr(op::MULTILOAD, &[m(SCRATCH), lit(1), m(7)])))));
    {
        let mut ops = vec![m(SCRATCH), lit(60)];
        ops.extend((0..60).map(|i| vec![0x80, 0x12, i as u8]));
        out.push(("multiload_60_long_operands", msg(&looped(instr(op::MULTILOAD, &ops)))));
    }
    // SWITCH over 200 targets, all its own address.
    {
        let mut ops = vec![lit(200), m(0)];
        ops.extend((0..200).map(|_| m(0)));
        out.push(("switch_200", msg(&instr(op::SWITCH, &ops))));
    }
    // INPUT-BITS and INPUT-HUFFMAN with no input left: jump to themselves.
    out.push(("input_bits_no_input", msg(&instr(op::INPUT_BITS, &[m(1), m(SCRATCH), m(0)]))));
    out.push((
        "input_huffman_1_set_no_input",
        msg(&instr(op::INPUT_HUFFMAN, &[m(SCRATCH), m(0), lit(1), m(1), m(0), m(0), m(0)])),
    ));
    {
        // 100 sets (not cached): the first needs a bit, the others none.
        let mut ops = vec![m(SCRATCH), m(0), lit(100), m(1), m(0), m(1), m(0)];
        for _ in 1..100 {
            ops.extend([vec![0x80, 0, 0], vec![0x80, 0, 0], vec![0x80, 0, 0], vec![0x80, 0, 0]]);
        }
        out.push(("input_huffman_100_sets_no_input", msg(&instr(op::INPUT_HUFFMAN, &ops))));
    }
    // INPUT-BYTES of 1 byte with no input: jumps to itself, 2 cycles.
    out.push(("input_bytes_no_input", msg(&instr(op::INPUT_BYTES, &[m(1), m(SCRATCH), m(0)]))));
    // SORT of 1 list of 2 words, then JUMP.
    out.push(("sort_2_words", msg(&looped(instr(op::SORT_ASCENDING, &[m(SCRATCH), m(1), m(2)])))));
    // CALL to itself (the stack wraps in memory).
    out.push(("call", msg(&instr(op::CALL, &[m(0)]))));
    // PUSH and POP, then JUMP.
    out.push(("push_pop", msg(&looped([instr(op::PUSH, &[m(1)]), instr(op::POP, &[m(SCRATCH)])].concat()))));
    out
}

/// Distinct empty states the round-robin STATE-ACCESS loop reads: each
/// access is 9 bytes of code and 6 of identifier, and all of them fill
/// the 64 KiB of UDVM memory from CODE.
const ROUND_ROBIN_STATES: u16 = 3764;
/// Other empty states stored at that endpoint (2048 per compartment, the
/// most an SMS of 131072 holds).
const ROUND_ROBIN_STORED: u32 = 1 << 20;

/// An endpoint storing `ROUND_ROBIN_STORED` empty states and
/// `ROUND_ROBIN_STATES` more of each kind read, and the messages that run
/// a loop of STATE-ACCESSes of the `ROUND_ROBIN_STATES`, in turn, until
/// their cycles run out: of empty states (1 cycle each), and of 1-byte
/// states (2 cycles each, the byte written beyond the loop). The loop is
/// a locally available state the message names (RFC 3320 §7.2), so
/// loading it costs no cycles.
fn round_robin_endpoint(cpb: u16) -> (Decompressor, Vec<(&'static str, Vec<u8>)>) {
    let mut d = Decompressor::new(Params { cpb, ..params() }).expect("valid parameters");
    d.set_limits(Limits::unlimited());
    let states = d.states_mut();
    // Fillers: instructions 1 to 16 at every address (never read).
    for i in 0..ROUND_ROBIN_STORED {
        let (address, instruction) = (i as u16, 1 + (i >> 16) as u16);
        states.create(CompartmentId(u64::from(i / 2048)), address, instruction, 6, &[], 1);
    }
    // The states read: instruction 0 (go on to the next), addresses apart;
    // the 1-byte ones are written from 60000, past the loop.
    let mut kinds = Vec::new();
    for (name, len, at) in [(ROUND_ROBIN, 0, 0), (ROUND_ROBIN_1_BYTE, 1, 60000)] {
        let mut ids = Vec::new();
        for k in 0..ROUND_ROBIN_STATES {
            // 1024 a compartment: as many as its SMS holds, whatever len.
            let compartment = CompartmentId(1_000_000 * (1 + len) + u64::from(k / 1024));
            let value = vec![k as u8; len as usize];
            match states.create(compartment, at + k, 0, 6, &value, 1) {
                sigcomp::state::CreateOutcome::Created(id) => ids.push(id),
                o => panic!("{o:?}"),
            }
        }
        kinds.push((name, ids));
    }
    let mut msgs = Vec::new();
    for (name, ids) in kinds {
        let loop_state = round_robin_loop(&ids);
        msgs.push((name, emit_state_message(None, &loop_state.id.0[..6], &[]).expect("a state message")));
        d.states_mut().add_local(loop_state);
    }
    (d, msgs)
}

/// The loop of STATE-ACCESSes of `ids` (each state's own length, address
/// and instruction), as a state loaded at and started from CODE.
fn round_robin_loop(ids: &[StateId]) -> State {
    let access = |at: u16| instr(op::STATE_ACCESS, &[fixed(at), m(6), m(0), m(0), m(0), m(0)]);
    let code_len = access(0).len() * ids.len() + 4; // and a 4-byte JUMP
    let ids_at = CODE + code_len as u16;
    let mut program = Vec::new();
    for i in 0..ids.len() {
        program.extend(access(ids_at + 6 * i as u16));
    }
    // JUMP's operand is relative to its own address (RFC 3320 §8.5).
    program.extend(instr(op::JUMP, &[fixed(0u16.wrapping_sub(program.len() as u16))]));
    for id in ids {
        program.extend_from_slice(&id.0[..6]);
    }
    assert!(usize::from(CODE) + program.len() <= 60000, "{} bytes", program.len());
    State::new(CODE, CODE, 6, &program)
}

/// SHA-1 of 0 bytes, then of 1 byte, 300 times, then JUMP back: each
/// digest is written 5 bytes before byte_copy_right, so 15 of its bytes
/// wrap to byte_copy_left (RFC 3320 §8.4), over the 1-byte input.
fn sha1_alternating_wrapped() -> Vec<u8> {
    let (left, right) = (SCRATCH, SCRATCH + 10);
    let mut code = instr(op::MULTILOAD, &[m(64), lit(2), fixed(left), fixed(right)]);
    let body_at = CODE + code.len() as u16;
    for _ in 0..300 {
        code.extend(instr(op::SHA_1, &[m(left), m(0), m(right - 5)]));
        code.extend(instr(op::SHA_1, &[m(left), m(1), m(right - 5)]));
    }
    let jump_at = CODE + code.len() as u16;
    code.extend(instr(op::JUMP, &[fixed(body_at.wrapping_sub(jump_at))]));
    emit_bytecode_message(None, &code, CODE, &[]).expect("a bytecode message")
}

/// A compartment (0) holding 2048 empty states, the most an SMS of 131072
/// holds (each is accounted 64 bytes, RFC 3320 §6.2).
fn full_compartment() -> Decompressor {
    let mut d = Decompressor::new(params()).expect("valid parameters");
    for address in 0..2048 {
        d.states_mut().create(CompartmentId(0), address, 0, 6, &[], 1);
    }
    d
}

/// Messages whose cost is in `accept` (the state requests RFC 3320 §6.2
/// carries out after the message): name, message, and whether accepting
/// it changes the endpoint (then each run gets a new one).
fn accepted_messages() -> Vec<(&'static str, Vec<u8>, bool)> {
    let msg = |code: &[u8]| emit_bytecode_message(None, code, CODE, &[]).unwrap();
    // Four STATE-FREEs of identifiers the compartment does not hold (the
    // six bytes at 0), then END-MESSAGE: 5 cycles.
    let mut frees = Vec::new();
    for _ in 0..4 {
        frees.extend(instr(op::STATE_FREE, &[m(0), m(6)]));
    }
    frees.extend(end_message());
    // END-MESSAGE saving 60000 bytes: 938 states evicted to make room.
    let create = instr(op::END_MESSAGE, &[m(0), m(0), fixed(60000), m(0), m(0), m(6), m(1)]);
    vec![("state_free_4_in_2048_states", msg(&frees), false), ("create_evicting_938_states", msg(&create), true)]
}

fn accepted_table(msgs: &[(&'static str, Vec<u8>, bool)]) {
    let mut kept = full_compartment();
    for (name, msg, changes) in msgs {
        let mut times = Vec::new();
        let mut cycles = 0;
        for _ in 0..9 {
            let mut fresh = if *changes { Some(full_compartment()) } else { None };
            let d = fresh.as_mut().unwrap_or(&mut kept);
            let t = Instant::now();
            let out = d.decompress(black_box(msg), Transport::Message).expect("decompresses");
            cycles = out.cycles;
            black_box(d.accept(out.pending, CompartmentId(0)));
            times.push(t.elapsed());
        }
        let t = times.iter().copied().min().unwrap_or_default();
        println!(
            "{:<34} {:>10} {:>12.1} {:>10.1} {:>10}",
            format!("{name}+accept"),
            cycles,
            t.as_secs_f64() * 1e6,
            t.as_secs_f64() * 1e9 / cycles.max(1) as f64,
            "-"
        );
    }
}

/// Runs `msg` once: the cycles it was charged, and whether it ran out.
fn run(d: &mut Decompressor, msg: &[u8]) -> u64 {
    match d.decompress(msg, Transport::Message) {
        Ok(out) => out.cycles,
        Err(f) => f.cycles,
    }
}

fn table(d: &mut Decompressor, msgs: &[(&'static str, Vec<u8>)]) {
    for (name, msg) in msgs {
        table_row(d, name, msg);
    }
}

fn table_row(d: &mut Decompressor, name: &str, msg: &[u8]) {
    // A loop ends when its cycles run out (CALL's when its stack wraps
    // into its code), a straight run at END-MESSAGE: none fails early.
    if let Err(f) = d.decompress(msg, Transport::Message) {
        assert!(f.reason == sigcomp::Reason::CyclesExhausted || f.cycles > 10_000, "{name}: {f:?}");
    }
    let cycles = run(d, msg);
    let (times, on_cpu): (Vec<Duration>, Vec<Option<Duration>>) = (0..9)
        .map(|_| {
            let cpu = cpu_time();
            let t = Instant::now();
            black_box(run(d, black_box(msg)));
            let wall = t.elapsed();
            (wall, cpu_time().zip(cpu).map(|(after, before)| after.saturating_sub(before)))
        })
        .unzip();
    // The fastest run: other processes on the machine only add time.
    let t = times.iter().copied().min().unwrap_or_default();
    // The median: the scheduler adds a thread's CPU time at its ticks and
    // switches (a few ms apart), so only runs of 40 ms or more are told.
    let cpu = on_cpu.into_iter().collect::<Option<Vec<_>>>().filter(|_| t >= Duration::from_millis(40)).map(|mut v| {
        v.sort();
        v[v.len() / 2]
    });
    let per_cycle = |t: Duration| t.as_secs_f64() * 1e9 / cycles.max(1) as f64;
    println!(
        "{:<34} {:>10} {:>12.1} {:>10.1} {:>10}",
        name,
        cycles,
        t.as_secs_f64() * 1e6,
        per_cycle(t),
        cpu.map_or("-".to_string(), |c| format!("{:.1}", per_cycle(c)))
    );
}

/// Time this thread has run on a CPU (Linux: the first field of
/// /proc/thread-self/schedstat, in ns): on a machine shared with other
/// work, a long message is descheduled for part of its wall-clock time.
fn cpu_time() -> Option<Duration> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    Some(Duration::from_nanos(s.split_whitespace().next()?.parse().ok()?))
}

/// Name of the round-robin STATE-ACCESS loop.
const ROUND_ROBIN: &str = "state_access_round_robin_3764_of_1m";
/// Name of the round-robin STATE-ACCESS loop of 1-byte states.
const ROUND_ROBIN_1_BYTE: &str = "state_access_1b_round_robin_of_1m";
/// Name of the round-robin loop at 16 cycles per bit, `sigkit proxy`'s
/// default: a message runs about four rounds rather than about 36, so the
/// first lookup of each state, from the store, weighs most.
const ROUND_ROBIN_CPB16: &str = "state_access_round_robin_cpb16";

fn main() {
    let mut e = endpoint();
    // A name filter (criterion's first free argument) applies to the table too.
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-') && a != "--bench");
    let msgs: Vec<_> = messages(&e)
        .into_iter()
        .filter(|(name, _)| filter.as_ref().is_none_or(|f| name.contains(f.as_str())))
        .collect();
    println!("{:<34} {:>10} {:>12} {:>10} {:>10}", "loop", "cycles", "µs/message", "ns/cycle", "cpu ns/cy");
    table(&mut e.d, &msgs);
    let wanted = |name: &str| filter.as_ref().is_none_or(|f| name.contains(f.as_str()));
    if wanted(ROUND_ROBIN_CPB16) {
        let (mut d, msgs) = round_robin_endpoint(16);
        if let Some((_, msg)) = msgs.iter().find(|(name, _)| *name == ROUND_ROBIN) {
            table_row(&mut d, ROUND_ROBIN_CPB16, msg);
        }
    }
    let mut round_robin = [ROUND_ROBIN, ROUND_ROBIN_1_BYTE].into_iter().any(wanted).then(|| round_robin_endpoint(128));
    if let Some((d, msgs)) = &mut round_robin {
        msgs.retain(|(name, _)| wanted(name));
        for (name, msg) in msgs.iter() {
            table_row(d, name, msg);
        }
    }
    let accepted: Vec<_> = accepted_messages()
        .into_iter()
        .filter(|(name, ..)| filter.as_ref().is_none_or(|f| name.contains(f.as_str())))
        .collect();
    accepted_table(&accepted);
    if std::env::args().any(|a| a == "--table-only") {
        return;
    }
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(1))
        .sample_size(10)
        .without_plots()
        .configure_from_args();
    let mut group = c.benchmark_group("worst_cycles");
    for (name, msg) in &msgs {
        let cycles = run(&mut e.d, msg);
        group.throughput(Throughput::Elements(cycles));
        group.bench_function(*name, |b| b.iter(|| run(&mut e.d, black_box(msg))));
    }
    if let Some((d, msgs)) = &mut round_robin {
        for (name, msg) in msgs.iter() {
            group.throughput(Throughput::Elements(run(d, msg)));
            group.bench_function(*name, |b| b.iter(|| run(d, black_box(msg))));
        }
    }
    let mut kept = full_compartment();
    for (name, msg, changes) in &accepted {
        let mut fresh = full_compartment();
        let out = fresh.decompress(msg, Transport::Message).expect("decompresses");
        group.throughput(Throughput::Elements(out.cycles));
        let name = format!("{name}+accept");
        if *changes {
            group.bench_function(name, |b| {
                b.iter_batched(
                    full_compartment,
                    |mut d| {
                        let out = d.decompress(msg, Transport::Message).expect("decompresses");
                        d.accept(out.pending, CompartmentId(0));
                        d
                    },
                    BatchSize::PerIteration,
                )
            });
        } else {
            group.bench_function(name, |b| {
                b.iter(|| {
                    let out = kept.decompress(msg, Transport::Message).expect("decompresses");
                    kept.accept(out.pending, CompartmentId(0))
                })
            });
        }
    }
    group.finish();
    c.final_summary();
}
