//! The endpoint and compressor options that `sigkit flow` and `sigkit
//! bench` share: both run two in-process SigComp endpoints on the same
//! settings, with the defaults of the SigComp performance thesis §8 (SMS 131072, 32 cycles per
//! bit).

use clap::{Args, ValueEnum};
use sigcomp::{Params, Transport};
use sigcomp_compress::{Config, Level, Mechanism, Priorities};
use sigkit_eval::flow::parse_algorithm;

#[derive(Clone, Copy, ValueEnum)]
pub enum TransportArg {
    /// Message-based: each SigComp message is one datagram (RFC 3320 §4.2.1).
    Udp,
    /// Stream-based: record-marked messages on one connection (RFC 3320 §4.2.2).
    Tcp,
}

impl TransportArg {
    pub fn transport(self) -> Transport {
        match self {
            TransportArg::Udp => Transport::Message,
            TransportArg::Tcp => Transport::Stream,
        }
    }

    /// "udp" or "tcp", as the option is spelt.
    pub fn name(self) -> &'static str {
        match self {
            TransportArg::Udp => "udp",
            TransportArg::Tcp => "tcp",
        }
    }
}

#[derive(Args)]
pub struct EndpointArgs {
    /// Compression algorithm: lzss, deflate or lz77 (those this build of
    /// sigcomp-compress has; any other name is an error listing them).
    #[arg(long, default_value = "lzss")]
    pub algo: String,
    /// SigComp mechanism: basic, static, dynamic or shared (the SigComp performance thesis, §9.6).
    #[arg(long, default_value = "shared")]
    pub mechanism: String,
    /// decompression_memory_size of both endpoints (2048, 4096, ..., 131072).
    #[arg(long, default_value_t = 8192)]
    pub dms: u32,
    /// state_memory_size per compartment (0, 2048, ..., 131072); the SigComp performance thesis §8
    /// uses the maximum, 131072.
    #[arg(long, default_value_t = 131072)]
    pub sms: u32,
    /// cycles_per_bit (16, 32, 64, 128); the SigComp performance thesis §8 uses 32.
    #[arg(long, default_value_t = 32)]
    pub cpb: u16,
    /// Transport between the endpoints [default: udp]. `sigkit ran` refuses
    /// it: the SigComp performance thesis's RAN study fixes a reliable one
    /// (§9.10).
    #[arg(long, value_enum)]
    pub transport: Option<TransportArg>,
    /// Longest match of the compressor: 18, 66 or 258 bytes.
    #[arg(long, default_value_t = 258)]
    pub lookahead: usize,
    /// Priorities of the RFC 3485 SIP/SDP dictionary in the window, "A-B"
    /// with 1 <= A <= B <= 5, or "none".
    #[arg(long, default_value = "1-3")]
    pub dict_priority: String,
    /// Compression level, 1 (fastest: a greedy parse over short hash
    /// chains) to 9 (smallest); 6 is the exact shortest-path parse.
    #[arg(long, default_value = "6", value_parser = parse_level)]
    pub level: Level,
    /// Also run every message through the peer's decompressor inside the
    /// compressor and check the output, the states created and the cycles
    /// against what the compressor computed (slower; LZSS messages are
    /// otherwise not run, the other algorithms always are).
    #[arg(long)]
    pub verify: bool,
}

/// A compression level from its number, 1 to 9.
fn parse_level(s: &str) -> Result<Level, String> {
    let n: u8 = s.parse().map_err(|_| format!("{s:?} is not a level from 1 to 9"))?;
    Level::try_from(n).map_err(|e| e.to_string())
}

impl EndpointArgs {
    /// The transport given, or UDP.
    pub fn transport(&self) -> TransportArg {
        self.transport.unwrap_or(TransportArg::Udp)
    }

    /// The compressor configuration (other settings at their defaults) and
    /// both endpoints' parameters, or the usage error to print.
    pub fn resolve(&self) -> Result<(Config, Params), String> {
        let algorithm = parse_algorithm(&self.algo).map_err(|e| e.to_string())?;
        let Some(mechanism) = Mechanism::parse(&self.mechanism) else {
            return Err(format!("unknown mechanism {:?} (basic, static, dynamic or shared)", self.mechanism));
        };
        let dictionary = if self.dict_priority == "none" {
            None
        } else {
            Some(Priorities::parse(&self.dict_priority).ok_or_else(|| {
                format!("--dict-priority {:?} is not A-B with 1 <= A <= B <= 5, nor none", self.dict_priority)
            })?)
        };
        let params = Params { dms: self.dms, sms: self.sms, cpb: self.cpb, ..Params::default() };
        params.validate().map_err(|e| format!("bad endpoint parameters: {e}"))?;
        let config = Config {
            algorithm,
            mechanism,
            transport: self.transport().transport(),
            lookahead: self.lookahead,
            dictionary,
            level: self.level,
            verify: self.verify,
        };
        Ok((config, params))
    }
}
