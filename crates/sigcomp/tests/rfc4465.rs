//! Every torture test of RFC 4465, run against the real decompressor with
//! its expected output, cycle count and failure reason exactly as the RFC
//! gives them. The vectors live in `tests/data/rfc4465.json`, transcribed
//! from the RFC's Appendix A dumps and Sections 2–4 (see
//! `tests/data/check_rfc4465.py` for the structural checks).

use std::collections::HashMap;

use serde::Deserialize;
use sigcomp::wire::{Deframer, Frame};
use sigcomp::{CompartmentId, Decompressor, Params, Transport};

#[derive(Deserialize)]
struct Vectors {
    tests: Vec<TestCase>,
}

#[derive(Deserialize)]
struct TestCase {
    id: String,
    endpoint: Endpoint,
    transport: String,
    steps: Vec<Step>,
}

#[derive(Deserialize)]
struct Endpoint {
    dms: u32,
    cpb: u16,
    sms: u32,
    #[serde(default)]
    sigcomp_version: Option<u8>,
}

#[derive(Deserialize)]
struct Step {
    message_hex: String,
    compartment: Option<String>,
    expect: Expect,
    #[serde(default)]
    note: Option<String>,
}

#[derive(Deserialize, Clone, Default)]
struct Expect {
    #[serde(default)]
    output_hex: Option<String>,
    #[serde(default)]
    cycles: Option<u64>,
    #[serde(default)]
    nack: Option<String>,
    #[serde(default)]
    messages: Option<Vec<Expect>>,
    #[serde(default)]
    states_created: Option<Vec<CreatedState>>,
    #[serde(default)]
    states_freed: Option<Vec<String>>,
    #[serde(default)]
    states_deleted: Option<Vec<String>>,
    #[serde(default)]
    compartment_state_count: Option<usize>,
    #[serde(default)]
    requested_feedback_flags: Option<Flags>,
    #[serde(default)]
    returned_parameters: Option<WantParams>,
    #[serde(default)]
    requested_feedback_hex: Option<String>,
    #[serde(default)]
    returned_feedback_hex: Option<String>,
}

#[derive(Deserialize, Clone)]
struct CreatedState {
    name: String,
    #[serde(default)]
    id_prefix_hex: String,
}

#[derive(Deserialize, Clone)]
#[allow(non_snake_case)]
struct Flags {
    Q: u8,
    S: u8,
    I: u8,
}

#[derive(Deserialize, Clone)]
struct WantParams {
    encoded_hex: String,
    partial_state_ids_hex: Vec<String>,
}

struct Got {
    compartment: Option<CompartmentId>,
    flags: Option<(bool, bool, bool)>,
    returned_parameters: Option<(Vec<u8>, Vec<String>)>,
    output: Option<Vec<u8>>,
    cycles: u64,
    nack: Option<String>,
    created: Vec<String>,
    requested_feedback: Option<Vec<u8>>,
    returned_feedback: Option<Vec<u8>>,
}

fn unhex(s: &str) -> Vec<u8> {
    let clean: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    hex::decode(clean).expect("vector hex")
}

fn vectors() -> Vectors {
    let text = include_str!("data/rfc4465.json");
    serde_json::from_str(text).expect("rfc4465.json parses")
}

struct Runner {
    d: Decompressor,
    compartments: HashMap<String, CompartmentId>,
    deframer: Deframer,
    /// Pack every compartment's states after each message
    /// (`StateHandler::pack_compartment`), as an endpoint does for idle
    /// compartments; the RFC's results must not change.
    pack: bool,
    /// Items seen packed when a message was decompressed.
    packed_seen: usize,
}

impl Runner {
    fn new(e: &Endpoint) -> Runner {
        let params = Params { dms: e.dms, cpb: e.cpb, sms: e.sms, version: e.sigcomp_version.unwrap_or(1) };
        Runner {
            d: Decompressor::new(params).expect("valid endpoint"),
            compartments: HashMap::new(),
            deframer: Deframer::new(0),
            pack: false,
            packed_seen: 0,
        }
    }

    fn one(&mut self, msg: &[u8], transport: Transport, compartment: Option<&str>) -> Got {
        if self.pack {
            for id in self.compartments.values() {
                self.d.states_mut().pack_compartment(*id);
            }
            let states = self.d.states();
            self.packed_seen += self
                .compartments
                .values()
                .filter_map(|id| states.compartment(*id))
                .flat_map(|c| c.entries.iter())
                .filter(|e| states.get(&e.id).is_some_and(|s| s.is_packed()))
                .count();
        }
        match self.d.decompress(msg, transport) {
            Ok(out) => {
                let requested_feedback = out.pending.requested_feedback.as_ref().and_then(|f| f.item.clone());
                let returned_feedback = out.pending.returned_feedback.clone();
                let flags =
                    out.pending.requested_feedback.as_ref().map(|f| (f.item.is_some(), f.no_state, f.no_local_states));
                let returned_parameters = out.pending.returned_parameters.as_ref().map(|p| {
                    (vec![p.params_byte, p.version], p.local_states.iter().map(hex::encode).collect::<Vec<_>>())
                });
                let mut cid = None;
                let created = match compartment {
                    Some(name) => {
                        let n = self.compartments.len() as u64;
                        let id = *self.compartments.entry(name.to_string()).or_insert(CompartmentId(n));
                        cid = Some(id);
                        self.d.accept(out.pending, id).created.iter().map(|s| s.to_hex()).collect()
                    }
                    None => Vec::new(),
                };
                Got {
                    compartment: cid,
                    flags,
                    returned_parameters,
                    output: Some(out.output),
                    cycles: out.cycles,
                    nack: None,
                    created,
                    requested_feedback,
                    returned_feedback,
                }
            }
            Err(f) => Got {
                compartment: None,
                flags: None,
                returned_parameters: None,
                output: None,
                cycles: f.cycles,
                nack: Some(f.reason.name().to_string()),
                created: Vec::new(),
                requested_feedback: None,
                returned_feedback: None,
            },
        }
    }
}

fn check(ctx: &str, got: &Got, want: &Expect, failures: &mut Vec<String>) {
    let mut bad = |what: String| failures.push(format!("{ctx}: {what}"));
    match (&want.nack, &got.nack) {
        (Some(w), Some(g)) if w != g => bad(format!("failed with {g}, RFC says {w}")),
        (Some(w), None) => bad(format!("succeeded, RFC says failure {w}")),
        (None, Some(g)) => bad(format!("failed with {g}, RFC says success")),
        _ => {}
    }
    if let Some(w) = &want.output_hex {
        let w = unhex(w);
        if got.output.as_deref() != Some(&w[..]) {
            bad(format!(
                "output {} , RFC says {}",
                got.output.as_ref().map(hex::encode).unwrap_or_else(|| "none".into()),
                hex::encode(&w)
            ));
        }
    }
    if let Some(w) = want.cycles {
        if got.cycles != w {
            bad(format!("used {} cycles, RFC says {w}", got.cycles));
        }
    }
    if let Some(w) = &want.states_created {
        // A request for an item the message already created is one item
        // (RFC 4896 §5.2): compare distinct identifiers in order.
        let mut w = w.clone();
        let mut seen = Vec::new();
        w.retain(|c| {
            let fresh = c.id_prefix_hex.is_empty() || !seen.contains(&c.id_prefix_hex);
            seen.push(c.id_prefix_hex.clone());
            fresh
        });
        let ok = got.created.len() == w.len()
            && got.created.iter().zip(&w).all(|(g, w)| g.starts_with(&w.id_prefix_hex.to_lowercase()));
        if !ok {
            let names: Vec<String> = w.iter().map(|c| format!("{}={}", c.name, c.id_prefix_hex)).collect();
            bad(format!("created {:?}, RFC says {:?}", got.created, names));
        }
    }
    if let Some(f) = &want.requested_feedback_flags {
        let w = (f.Q == 1, f.S == 1, f.I == 1);
        if got.flags != Some(w) {
            bad(format!("requested feedback flags {:?}, RFC says {:?}", got.flags, w));
        }
    }
    if let Some(p) = &want.returned_parameters {
        let w = (unhex(&p.encoded_hex), p.partial_state_ids_hex.iter().map(|s| s.to_lowercase()).collect());
        if got.returned_parameters.as_ref() != Some(&w) {
            bad(format!("returned parameters {:?}, RFC says {:?}", got.returned_parameters, w));
        }
    }
    if let Some(w) = &want.requested_feedback_hex {
        let w = unhex(w);
        if got.requested_feedback.as_deref() != Some(&w[..]) {
            bad(format!(
                "requested feedback {:?}, RFC says {}",
                got.requested_feedback.as_ref().map(hex::encode),
                hex::encode(&w)
            ));
        }
    }
    if let Some(w) = &want.returned_feedback_hex {
        let w = unhex(w);
        if got.returned_feedback.as_deref() != Some(&w[..]) {
            bad(format!(
                "returned feedback {:?}, RFC says {}",
                got.returned_feedback.as_ref().map(hex::encode),
                hex::encode(&w)
            ));
        }
    }
}

/// Checks the compartment's contents after a step: which named states left
/// it (freed or evicted) and how many it holds.
fn check_compartment(
    ctx: &str,
    r: &Runner,
    got: &Got,
    want: &Expect,
    names: &mut HashMap<String, String>,
    failures: &mut Vec<String>,
) {
    if let Some(created) = &want.states_created {
        for (c, id) in created.iter().zip(&got.created) {
            names.insert(c.name.clone(), id.clone());
        }
    }
    let Some(cid) = got.compartment else { return };
    let held: Vec<String> =
        r.d.states().compartment(cid).map(|c| c.entries.iter().map(|e| e.id.to_hex()).collect()).unwrap_or_default();
    let recreated: Vec<&str> = want.states_created.iter().flatten().map(|c| c.name.as_str()).collect();
    for name in want.states_freed.iter().chain(want.states_deleted.iter()).flatten() {
        if recreated.contains(&name.as_str()) {
            continue; // freed, then created again by the same message
        }
        match names.get(name) {
            Some(id) if held.contains(id) => {
                failures.push(format!("{ctx}: state {name} still in the compartment, RFC says it is gone"))
            }
            Some(_) => {}
            None => failures.push(format!("{ctx}: state {name} was never created")),
        }
    }
    if let Some(n) = want.compartment_state_count {
        if held.len() != n {
            failures.push(format!("{ctx}: compartment holds {} states, RFC says {n}", held.len()));
        }
    }
}

/// Runs `t`; returns how many packed items its messages met (with `pack`).
fn run_case(t: &TestCase, failures: &mut Vec<String>, pack: bool) -> usize {
    run_case_on(t, failures, pack, true)
}

/// As [`run_case`], with the native decoders on or off (the UDVM alone).
fn run_case_on(t: &TestCase, failures: &mut Vec<String>, pack: bool, native: bool) -> usize {
    let mut r = Runner::new(&t.endpoint);
    r.pack = pack;
    r.d.set_native_decoders(native);
    let mut names: HashMap<String, String> = HashMap::new();
    for (i, step) in t.steps.iter().enumerate() {
        let ctx =
            format!("{} step {}{}", t.id, i + 1, step.note.as_deref().map(|n| format!(" ({n})")).unwrap_or_default());
        let bytes = unhex(&step.message_hex);
        let compartment = step.compartment.as_deref();
        if t.transport == "tcp" {
            // Each step is a byte stream of its own; state persists.
            r.deframer = Deframer::new(0);
            let mut frames = Vec::new();
            r.deframer.push(&bytes, &mut frames);
            let mut gots = Vec::new();
            for f in frames {
                match f {
                    Frame::Message(m) => gots.push(r.one(&m, Transport::Stream, compartment)),
                    Frame::FramingError => gots.push(Got {
                        compartment: None,
                        flags: None,
                        returned_parameters: None,
                        output: None,
                        cycles: 0,
                        nack: Some("FRAMING_ERROR".into()),
                        created: Vec::new(),
                        requested_feedback: None,
                        returned_feedback: None,
                    }),
                }
            }
            let wants: Vec<Expect> = match &step.expect.messages {
                Some(m) => m.clone(),
                None => vec![step.expect.clone()],
            };
            if gots.len() != wants.len() {
                failures.push(format!("{ctx}: stream gave {} messages, RFC says {}", gots.len(), wants.len()));
            }
            for (j, (g, w)) in gots.iter().zip(&wants).enumerate() {
                check(&format!("{ctx} message {}", j + 1), g, w, failures);
            }
        } else {
            let got = r.one(&bytes, Transport::Message, compartment);
            check(&ctx, &got, &step.expect, failures);
            check_compartment(&ctx, &r, &got, &step.expect, &mut names, failures);
        }
    }
    r.packed_seen
}

fn run_named(id: &str) {
    let v = vectors();
    let t = v.tests.iter().find(|t| t.id == id).unwrap_or_else(|| panic!("no vector {id}"));
    let mut failures = Vec::new();
    run_case(t, &mut failures, false);
    assert!(
        failures.is_empty(),
        "{} of {} steps of {id} disagree with RFC 4465:\n{}",
        failures.len(),
        t.steps.len(),
        failures.join("\n")
    );
}

macro_rules! torture {
    ($($name:ident => $id:literal,)*) => {
        $(
            #[test]
            fn $name() {
                run_named($id);
            }
        )*

        /// Every vector again, every compartment's states packed before
        /// each message: outputs, cycles, failures and states are the RFC's.
        #[test]
        fn every_vector_passes_with_idle_states_packed() {
            let mut failures = Vec::new();
            let mut packed = 0;
            for t in &vectors().tests {
                packed += run_case(t, &mut failures, true);
            }
            assert!(failures.is_empty(), "with states packed:\n{}", failures.join("\n"));
            // The run did read packed states (by header and by STATE-ACCESS).
            assert!(packed >= 5, "only {packed} packed items met");
        }

        /// Every vector again in the UDVM alone, without the native
        /// decoders of recognised bytecode (on in every test above).
        #[test]
        fn every_vector_passes_without_native_decoders() {
            let mut failures = Vec::new();
            for t in &vectors().tests {
                run_case_on(t, &mut failures, false, false);
            }
            assert!(failures.is_empty(), "without native decoders:\n{}", failures.join("\n"));
        }

        /// Every vector in the file has a test above, and vice versa.
        #[test]
        fn every_vector_has_a_test() {
            let named = [$($id),*];
            let v = vectors();
            let ids: Vec<&str> = v.tests.iter().map(|t| t.id.as_str()).collect();
            assert_eq!(ids.len(), named.len(), "vectors {ids:?}");
            for id in ids {
                assert!(named.contains(&id), "vector {id} has no test");
            }
        }
    };
}

torture! {
    t2_1_bit_manipulation => "2.1-bit-manipulation",
    t2_2_arithmetic => "2.2-arithmetic",
    t2_3_sorting => "2.3-sorting",
    t2_4_sha_1 => "2.4-sha-1",
    t2_5_load_and_multiload => "2.5-load-and-multiload",
    t2_6_copy => "2.6-copy",
    t2_7_copy_literal_and_copy_offset => "2.7-copy-literal-and-copy-offset",
    t2_8_memset => "2.8-memset",
    t2_9_crc => "2.9-crc",
    t2_10_input_bits => "2.10-input-bits",
    t2_11_input_huffman => "2.11-input-huffman",
    t2_12_input_bytes => "2.12-input-bytes",
    t2_13_stack_manipulation => "2.13-stack-manipulation",
    t2_14_program_flow => "2.14-program-flow",
    t2_15_state_creation => "2.15-state-creation",
    t2_16_state_access => "2.16-state-access",
    t3_1_useful_values_udp_dms2048_cpb16_v1 => "3.1-useful-values-udp-dms2048-cpb16-v1",
    t3_1_useful_values_tcp_dms2048_cpb16_v1 => "3.1-useful-values-tcp-dms2048-cpb16-v1",
    t3_1_useful_values_udp_dms8192_cpb16_v1 => "3.1-useful-values-udp-dms8192-cpb16-v1",
    t3_1_useful_values_udp_dms2048_cpb16_v2_derived => "3.1-useful-values-udp-dms2048-cpb16-v2-derived",
    t3_2_cycles_checking_cpb16 => "3.2-cycles-checking-cpb16",
    t3_2_cycles_checking_cpb32 => "3.2-cycles-checking-cpb32",
    t3_3_message_based_transport_dms2048 => "3.3-message-based-transport-dms2048",
    t3_3_message_based_transport_dms8192 => "3.3-message-based-transport-dms8192",
    t3_4_stream_based_transport_dms2048 => "3.4-stream-based-transport-dms2048",
    t3_4_stream_based_transport_dms8192 => "3.4-stream-based-transport-dms8192",
    t3_5_input_past_end_of_message => "3.5-input-past-end-of-message",
    t4_1_sigcomp_feedback_mechanism => "4.1-sigcomp-feedback-mechanism",
    t4_2_state_memory_management => "4.2-state-memory-management",
    t4_3_multiple_compartments => "4.3-multiple-compartments",
    t4_4_accessing_rfc3485_state => "4.4-accessing-rfc3485-state",
    t4_5_bytecode_state_creation => "4.5-bytecode-state-creation",
}
