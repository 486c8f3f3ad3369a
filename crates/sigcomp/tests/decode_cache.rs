//! The UDVM's decode cache is invisible: a program run with it
//! ([`Machine::new`]) and without it ([`Machine::without_decode_cache`],
//! every instruction decoded from its bytes each time it runs) gives the
//! same result (output, failure with its pc, opcode and cycles, state
//! requests, feedback) and leaves the same memory.
//!
//! The programs loop over INPUT-HUFFMAN instructions (RFC 3320 §9.4.4)
//! with canonical, sometimes garbled, tables, some operands in memory, and
//! rewrite their own Huffman operands, those memory words and the
//! input_bit_order register (RFC 3320 §8.2) between executions, so the
//! cache must notice every write. Byte flips, short input and small cycle
//! budgets add bad code, truncated input and cycles running out mid-loop.
//! STATE-ACCESS instructions (RFC 3320 §9.4.5) read stored states by
//! partial identifiers of every length, some not found or too short for
//! the state, and write them over scratch memory or over the loop itself.
//! Each program runs as two messages through the same caches, as a
//! decompressor keeps its cache between messages.

use proptest::prelude::*;
use sigcomp::state::CreateOutcome;
use sigcomp::udvm::{op, DecodeCache, Machine};
use sigcomp::{CompartmentId, StateHandler};

/// END-MESSAGE, where every input instruction jumps when the input runs out.
const END: u16 = 128;
/// The words that memory operands name, one per operand.
const CELLS: u16 = 1024;
/// The stored states' identifiers, 20 bytes each (a fourth, all zero,
/// names no state).
const IDS: u16 = 2048;
/// Where STATE-ACCESS writes when it does not write over the loop.
const SCRATCH: u16 = 3000;

#[derive(Debug, Clone)]
enum Ins {
    /// INPUT-HUFFMAN to destination 32 + 2 × `dest`; each set (bits,
    /// lower_bound, upper_bound, uncompressed), an operand read from a
    /// memory word holding its value where the flag is set.
    Huffman {
        dest: u8,
        sets: Vec<([u16; 4], [bool; 4])>,
    },
    /// LOAD `value` over an operand value of an earlier instruction
    /// (`at` modulo their number), or, `raw`, over byte `at` of the loop.
    Rewrite {
        at: u16,
        raw: bool,
        value: u16,
    },
    /// LOAD `value` into memory word `cell` of the operands.
    Cell {
        cell: u8,
        value: u16,
    },
    /// LOAD the input_bit_order register (values above 7 fail).
    BitOrder(u16),
    InputBits(u8),
    /// OUTPUT of the first destination word.
    Output,
    /// STATE-ACCESS of stored state `state` (3: none) by its first
    /// `id_len` bytes; `target` 0 takes the state's address, 1 the
    /// scratch memory, 2 the loop's code.
    StateAccess {
        state: u8,
        id_len: u16,
        begin: u16,
        length: u16,
        target: u8,
        in_memory: [bool; 6],
    },
}

/// The stored states: an empty one, a long one at SCRATCH, and one whose
/// address is the loop's first instruction and which only its whole
/// identifier reaches (minimum_access_length 20).
fn states() -> (StateHandler, Vec<[u8; 20]>) {
    let mut h = StateHandler::new(8192);
    let long: Vec<u8> = (0..40u8).map(|i| i.wrapping_mul(37) ^ 0x5a).collect();
    let code = [op::JUMP, 0x80, 0, 0, op::OUTPUT, 0x80, 0, 32, 0x80, 0, 2];
    let mut ids = Vec::new();
    for (address, min, value) in [(0, 6, &[][..]), (SCRATCH, 6, &long[..]), (END + 8, 20, &code[..])] {
        match h.create(CompartmentId(1), address, 0, min, value, 1) {
            CreateOutcome::Created(id) => ids.push(id.0),
            o => panic!("{o:?}"),
        }
    }
    (h, ids)
}

/// The sets of a canonical Huffman code (each set's range starts one past
/// the last code of the set before, shifted by its bits; the last set
/// takes every code left), one operand sometimes garbled; up to 6 sets of
/// 1 to 3 bits, so 6 sets may ask for too many.
fn huffman() -> impl Strategy<Value = Ins> {
    let set = (1u32..=3, any::<u16>(), 0u16..300, prop::array::uniform4(prop::bool::weighted(0.25)));
    (0u8..4, prop::collection::vec(set, 0..7), prop::option::weighted(0.2, (any::<usize>(), any::<u16>()))).prop_map(
        |(dest, raw, garble)| {
            let (mut total, mut next_code) = (0u32, 0u32);
            let mut sets = Vec::new();
            for (j, &(bits, pick, uncompressed, in_memory)) in raw.iter().enumerate() {
                total += bits;
                let all = (1u32 << total.min(16)) - 1;
                let lower = (next_code << bits).min(all);
                let upper = if j + 1 == raw.len() { all } else { lower + u32::from(pick) % (all - lower + 1) };
                next_code = upper + 1;
                sets.push(([bits as u16, lower as u16, upper as u16, uncompressed], in_memory));
            }
            if let (Some((i, v)), false) = (garble, sets.is_empty()) {
                let n = sets.len();
                sets[i % n].0[i / 7 % 4] = v;
            }
            Ins::Huffman { dest, sets }
        },
    )
}

fn ins() -> impl Strategy<Value = Ins> {
    prop_oneof![
        5 => huffman(),
        3 => (any::<u16>(), prop::bool::weighted(0.2), prop_oneof![3 => 0u16..16, 1 => any::<u16>()])
            .prop_map(|(at, raw, value)| Ins::Rewrite { at, raw, value }),
        1 => (any::<u8>(), 0u16..20).prop_map(|(cell, value)| Ins::Cell { cell, value }),
        1 => prop_oneof![7 => 0u16..8, 1 => 8u16..12].prop_map(Ins::BitOrder),
        1 => (0u8..18).prop_map(Ins::InputBits),
        1 => Just(Ins::Output),
        // Mostly accesses that succeed, so the loop goes on and runs its
        // cached instructions again, some after a state was written over
        // them.
        3 => (prop_oneof![1 => Just(0u8), 4 => Just(1), 2 => Just(2), 1 => Just(3)],
              prop_oneof![2 => Just(20u16), 2 => Just(6), 3 => 6u16..=20, 1 => 0u16..30],
              prop_oneof![4 => Just(0u16), 1 => 0u16..48],
              prop_oneof![2 => Just(0u16), 3 => 1u16..8, 1 => 0u16..48],
              0u8..3,
              prop::array::uniform6(prop::bool::weighted(0.2)))
            .prop_map(|(state, id_len, begin, length, target, in_memory)| Ins::StateAccess {
                state, id_len, begin, length, target, in_memory
            }),
    ]
}

/// Memory with code being assembled at END. Every operand is 3 bytes:
/// 0x80 and the value, or 0x81 and the address of a word holding it.
struct Asm {
    mem: Vec<u8>,
    code: Vec<u8>,
    /// Where the operand values are, to rewrite.
    values: Vec<u16>,
    /// Memory words used by operands, from CELLS.
    cells: u16,
}

impl Asm {
    fn pc(&self) -> u16 {
        END + self.code.len() as u16
    }
    fn op(&mut self, opcode: u8, operands: &[u16]) {
        self.code.push(opcode);
        for &v in operands {
            self.operand(v, false);
        }
    }
    fn operand(&mut self, v: u16, in_memory: bool) {
        self.values.push(self.pc() + 1);
        if in_memory {
            let a = CELLS + 2 * self.cells;
            self.cells += 1;
            self.mem[usize::from(a)..usize::from(a) + 2].copy_from_slice(&v.to_be_bytes());
            self.code.push(0x81);
            self.code.extend_from_slice(&a.to_be_bytes());
        } else {
            self.code.push(0x80);
            self.code.extend_from_slice(&v.to_be_bytes());
        }
    }
}

/// Assembles the program into 4096 bytes of memory: END-MESSAGE at END,
/// then the loop (its address returned), with `flips` applied to the code.
fn image(body: &[Ins], bit_order: u16, flips: &[(u16, u8)], ids: &[[u8; 20]]) -> (Vec<u8>, u16) {
    let mut a =
        Asm { mem: vec![0u8; 4096], code: vec![op::END_MESSAGE, 0, 0, 0, 0, 0, 0, 0], values: vec![], cells: 0 };
    a.mem[68..70].copy_from_slice(&bit_order.to_be_bytes());
    for (i, id) in ids.iter().enumerate() {
        let at = usize::from(IDS) + 20 * i;
        a.mem[at..at + 20].copy_from_slice(id);
    }
    let start = a.pc();
    for i in body {
        let pc = a.pc();
        match i {
            Ins::Huffman { dest, sets } => {
                a.op(op::INPUT_HUFFMAN, &[32 + 2 * u16::from(*dest), END.wrapping_sub(pc)]);
                a.code.push(sets.len() as u8);
                for (vals, in_memory) in sets {
                    for (&v, &m) in vals.iter().zip(in_memory) {
                        a.operand(v, m);
                    }
                }
            }
            &Ins::Rewrite { at, raw, value } => {
                let target = match a.values.len() {
                    n if n > 0 && !raw => a.values[usize::from(at) % n],
                    _ => start + at % (pc - start).max(1),
                };
                a.op(op::LOAD, &[target, value]);
            }
            &Ins::Cell { cell, value } => a.op(op::LOAD, &[CELLS + 2 * (u16::from(cell) % a.cells.max(1)), value]),
            &Ins::BitOrder(v) => a.op(op::LOAD, &[68, v]),
            &Ins::InputBits(n) => a.op(op::INPUT_BITS, &[u16::from(n), 40, END.wrapping_sub(pc)]),
            Ins::Output => a.op(op::OUTPUT, &[32, 2]),
            &Ins::StateAccess { state, id_len, begin, length, target, in_memory } => {
                let address = [0, SCRATCH, start][usize::from(target)];
                let operands = [IDS + 20 * u16::from(state), id_len, begin, length, address, 0];
                a.code.push(op::STATE_ACCESS);
                for (v, m) in operands.into_iter().zip(in_memory) {
                    a.operand(v, m);
                }
            }
        }
    }
    let pc = a.pc();
    a.op(op::JUMP, &[start.wrapping_sub(pc)]);
    let Asm { mut mem, mut code, .. } = a;
    for &(at, bits) in flips {
        let i = usize::from(at) % code.len();
        code[i] ^= bits;
    }
    mem[usize::from(END)..usize::from(END) + code.len()].copy_from_slice(&code);
    (mem, start)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn the_decode_cache_changes_nothing(
        body in prop::collection::vec(ins(), 1..8),
        bit_order in 0u16..8,
        flips in prop_oneof![3 => Just(vec![]), 1 => prop::collection::vec((any::<u16>(), 1u8..), 1..3)],
        inputs in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..100), 2),
        cpb in prop_oneof![Just(1u16), Just(4), Just(16)],
    ) {
        let (states, ids) = states();
        let (image, start) = image(&body, bit_order, &flips, &ids);
        let (mut cached, mut uncached) = (DecodeCache::default(), DecodeCache::default());
        for input in &inputs {
            let run = |cache: &mut DecodeCache, keep: bool| {
                let (mut mem, mut out) = (image.clone(), Vec::new());
                let m = Machine::new(&mut mem, cache, &states, input, &mut out, cpb, 2);
                let m = if keep { m } else { m.without_decode_cache() };
                let result = m.run(start);
                (result, out, mem)
            };
            let (a, b) = (run(&mut cached, true), run(&mut uncached, false));
            prop_assert_eq!(&a.0, &b.0);
            prop_assert_eq!(&a.1, &b.1);
            prop_assert!(a.2 == b.2, "memory differs");
        }
    }
}
