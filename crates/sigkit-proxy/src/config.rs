//! The proxy's configuration: a TOML file whose every key is documented
//! here and in `sigkit.example.toml`, overridable from the command line.
//! Unknown keys and bad values are refused with the line and the reason.

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::ops::Range;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
use sigcomp::params::ParamError;
use sigcomp::{Limits, Params};
use sigcomp_compress::{Algorithm, Config as CompressorConfig, EndpointError, Level, Mechanism};

pub use crate::locate::Upstream;
use crate::locate::{host_port, HostPortError, CANNOT_RESOLVE};

/// The transport of a listening or upstream address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SipTransport {
    /// SIP over UDP (RFC 3261 §18): one message, or one SigComp message,
    /// per datagram.
    Udp,
    /// SIP over TCP (RFC 3261 §18.3): a stream, SIP messages framed by
    /// Content-Length and SigComp messages by record marking (RFC 3320
    /// §4.2.2).
    Tcp,
}

impl SipTransport {
    /// The transport token of a Via header (RFC 3261 §20.42).
    pub fn via_token(self) -> &'static str {
        match self {
            SipTransport::Udp => "UDP",
            SipTransport::Tcp => "TCP",
        }
    }

    /// The transport as a `listen` address spells it: `udp` or `tcp`.
    pub fn name(self) -> &'static str {
        match self {
            SipTransport::Udp => "udp",
            SipTransport::Tcp => "tcp",
        }
    }
}

/// `udp:HOST:PORT` or `tcp:HOST:PORT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TransportAddr {
    /// The `udp` or `tcp` before the first colon.
    pub transport: SipTransport,
    /// The `HOST:PORT` after it: an IP address (IPv6 in brackets), or a
    /// name resolved when the text is read ([`crate::locate::host_port`]),
    /// and a port.
    pub addr: SocketAddr,
}

/// Why a [`TransportAddr`] could not be read from its text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransportAddrError {
    /// The text (held here) has no colon.
    #[error("{0:?}: expected udp:HOST:PORT or tcp:HOST:PORT")]
    Form(String),
    /// What comes before the first colon is neither `udp` nor `tcp`.
    #[error("{text:?}: transport {transport:?} is not udp or tcp")]
    Transport {
        /// The whole text.
        text: String,
        /// What came before the first colon.
        transport: String,
    },
    /// What comes after the first colon is not a host and port, or its
    /// host is a name that does not resolve.
    #[error("{text:?}: {source}")]
    Addr {
        /// The whole text.
        text: String,
        /// Why no address came of it.
        source: HostPortError,
    },
}

impl TransportAddrError {
    /// Whether the text is well formed and its name did not resolve.
    pub fn is_resolution(&self) -> bool {
        matches!(self, TransportAddrError::Addr { source, .. } if source.is_resolution())
    }
}

impl FromStr for TransportAddr {
    type Err = TransportAddrError;

    fn from_str(s: &str) -> Result<TransportAddr, TransportAddrError> {
        let (t, addr) = s.split_once(':').ok_or_else(|| TransportAddrError::Form(s.to_string()))?;
        let transport = match t {
            "udp" => SipTransport::Udp,
            "tcp" => SipTransport::Tcp,
            _ => return Err(TransportAddrError::Transport { text: s.to_string(), transport: t.to_string() }),
        };
        let addr = host_port(addr).map_err(|source| TransportAddrError::Addr { text: s.to_string(), source })?;
        Ok(TransportAddr { transport, addr })
    }
}

impl fmt::Display for TransportAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.transport.name(), self.addr)
    }
}

impl<'de> Deserialize<'de> for Upstream {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Upstream, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(D::Error::custom)
    }
}

impl<'de> Deserialize<'de> for TransportAddr {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<TransportAddr, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(D::Error::custom)
    }
}

/// Everything the proxy can be told. Field docs are the reference for
/// the file's keys.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProxyConfig {
    /// Where terminals reach the proxy: `udp:HOST:PORT` and/or
    /// `tcp:HOST:PORT`. SigComp and plain SIP share each one (RFC 5049
    /// §4: the first byte of a datagram or of a TCP stream tells).
    pub listen: Vec<TransportAddr>,
    /// The SIP server behind the proxy (registrar and proxy), spoken to
    /// in plain SIP over UDP: `udp:HOST:PORT`, or a SIP URI
    /// (`sip:example.com`, `sip:example.com;transport=udp`) or host name
    /// located by RFC 3263 when the proxy starts ([`crate::locate`]; `tcp:`
    /// and `transport=tcp` are refused).
    pub upstream: Option<Upstream>,
    /// The local address the proxy sends to the upstream from and
    /// receives its messages on (port 0: any free port).
    pub upstream_local: Option<SocketAddr>,
    /// The address the proxy writes into Record-Route and Path on the
    /// terminals' side: a proxy farm's service address behind an L4
    /// balancer (docs/deploy.md). Default: the socket's own address.
    pub route_terminal: Option<SocketAddr>,
    /// The same on the upstream's side.
    pub route_upstream: Option<SocketAddr>,
    /// The proxy's SIP/SigComp identifier (RFC 5049 §6.1), a URN added as
    /// `sigcomp-id` where the proxy writes `comp=sigcomp`. Every instance
    /// of a proxy farm that shares state must use the same one.
    pub sigcomp_id: String,
    /// The `[sigcomp]` table: the parameters the proxy offers terminals
    /// and assumes of them (RFC 3320 §3.3, RFC 5049 §3), its compressor,
    /// and the caps on compartments and state.
    pub sigcomp: SigcompConfig,
    /// The `[defence]` table: the decompression budgets per source and
    /// overall ([`crate::defence`]); what they refuse shows as
    /// `sigkit_proxy_refused{budget}`.
    pub defence: DefenceConfig,
    /// Transaction stateful toward the upstream (RFC 3261 §16.6 step 9,
    /// §17): the proxy absorbs terminals' retransmissions, retransmits
    /// toward the upstream itself (Timers A and E), answers 100 Trying to
    /// INVITE and 408 when the upstream never answers. Default: stateless
    /// (§16.11), the terminals' and the upstream's retransmissions passing
    /// through.
    pub stateful: bool,
    /// Overload control toward the upstream (each core's shard keeps its
    /// own count of pending requests).
    pub overload: crate::overload::OverloadConfig,
    /// Prometheus metrics at `http://ADDR/metrics`; none when unset.
    pub metrics: Option<SocketAddr>,
    /// Worker threads of the runtime; 0: one per core.
    pub threads: usize,
    /// Proxies the terminals are split among by address, each with its own
    /// task, SigComp endpoint and share of the limits; 0: one per worker
    /// thread. A shard handles its datagrams one at a time, in the order
    /// they came, so a terminal's messages keep their order; more shards
    /// than threads spread an uneven load more evenly, at the price of a
    /// less even split of the limits.
    pub shards: usize,
    /// Receive buffer of each UDP socket in bytes (`SO_RCVBUF`); 0 keeps
    /// the system's default. Datagrams that arrive while the buffer is full
    /// are dropped by the kernel, so a burst the workers cannot take at
    /// once needs room here; Linux caps it at `net.core.rmem_max`.
    pub udp_receive_buffer: usize,
    /// At most this many terminal flows (a UDP source address, or a TCP
    /// connection) are remembered; beyond it the one idle longest is
    /// forgotten. Each costs about 200 bytes.
    pub max_flows: usize,
    /// A flow with no message either way for this many seconds, and no
    /// live registration through it, is forgotten.
    pub flow_idle_timeout_s: u64,
    /// At most this many REGISTERs are held for the registrar's answer
    /// (RFC 5049 §6: a SigComp REGISTER's state waits for the 2xx); past
    /// it a REGISTER is forwarded without being held, and the registration
    /// it makes is not known to the proxy until the terminal registers
    /// again. Split evenly among the shards.
    pub max_pending_registers: usize,
    /// The same from one source IP address (per shard).
    pub max_pending_registers_per_source: usize,
    /// At most this many bytes of SigComp state wait with the held
    /// REGISTERs; past it a REGISTER's state is declined at once (its
    /// terminal's next message creates it again). Split evenly among the
    /// shards.
    pub max_pending_state_bytes: usize,
    /// At most this many registrations are remembered (their terminals'
    /// state is kept, RFC 5049 §6); past it a new registration is not,
    /// until one ends. Split evenly among the shards.
    pub max_registrations: usize,
    /// Terminals' TCP connections: how many, how much each buffers, how
    /// long one may stay silent.
    pub tcp: TcpConfig,
    /// A Homer/heplify collector (`HOST:PORT`, a name resolved when the
    /// file is read) that gets every SIP message the proxy handles, both
    /// sides as plain SIP (a terminal's decompressed), as HEPv3 packets
    /// over UDP ([`crate::hep`]). None when unset.
    #[serde(deserialize_with = "some_host_port")]
    pub hep: Option<SocketAddr>,
    /// The capture agent id the HEP packets carry (chunk 12), which tells
    /// the collector's users which node captured a message.
    pub hep_id: u32,
    /// The collector's password (HEP chunk 14), when it wants one.
    pub hep_auth_key: Option<String>,
    /// A pcap file (link type RAW, IPv4/IPv6 with UDP or TCP) the same
    /// messages are written to, for sngrep or Wireshark; flushed every
    /// second and when the proxy stops. Replaced if it exists.
    pub capture: Option<PathBuf>,
    /// Messages that may wait for the capture writer (`hep`, `capture`);
    /// past it they are dropped and counted
    /// (`sigkit_proxy_capture_dropped_total`), never waited for.
    pub capture_queue: usize,
    /// The file the configuration was read from, so that a bad value is
    /// reported with its line ([`ProxyConfig::from_toml`] sets it).
    #[serde(skip)]
    pub source: Option<Arc<ConfigSource>>,
}

/// A configuration file's name and text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigSource {
    /// The name errors give the file (its path as given).
    pub name: String,
    /// The file's whole text, to find a key's line in.
    pub text: String,
    /// Keys whose value was replaced after reading (from the command
    /// line): their errors do not point into the file.
    pub overridden: Vec<String>,
}

impl ConfigSource {
    /// Each key's value and where it is in the text: `name`, or
    /// `table.name` for the keys of the tables (a table itself is not a
    /// value here).
    fn value_spans(&self) -> Vec<(String, Range<usize>)> {
        type Keys = BTreeMap<String, toml::Spanned<toml::Value>>;
        #[derive(Deserialize)]
        struct Tables {
            #[serde(default)]
            sigcomp: Keys,
            #[serde(default)]
            defence: Keys,
            #[serde(default)]
            overload: Keys,
            #[serde(default)]
            tcp: Keys,
        }
        let mut spans = Vec::new();
        if let Ok(top) = toml::from_str::<Keys>(&self.text) {
            spans.extend(top.into_iter().filter(|(_, v)| !v.get_ref().is_table()).map(|(k, v)| (k, v.span())));
        }
        if let Ok(t) = toml::from_str::<Tables>(&self.text) {
            for (table, keys) in
                [("sigcomp", t.sigcomp), ("defence", t.defence), ("overload", t.overload), ("tcp", t.tcp)]
            {
                spans.extend(keys.into_iter().map(|(k, v)| (format!("{table}.{k}"), v.span())));
            }
        }
        spans
    }

    /// The line (from 1) of the value of `key` (`name` or `table.name`).
    fn line_of(&self, key: &str) -> Option<usize> {
        if self.overridden.iter().any(|k| k == key) {
            return None;
        }
        let (_, span) = self.value_spans().into_iter().find(|(k, _)| k == key)?;
        Some(line_at(&self.text, span.start))
    }

    /// The key whose value holds byte `offset` of the text.
    fn key_at(&self, offset: usize) -> Option<String> {
        self.value_spans().into_iter().find(|(_, span)| span.contains(&offset)).map(|(k, _)| k)
    }

    /// What TOML refused, with its line; and with its key when it is a
    /// value the proxy could not read (a name it does not know, an
    /// address), as [`ProxyConfig::validate`] reports the values it judges.
    fn toml_error(&self, e: &toml::de::Error) -> ConfigError {
        let Some(span) = e.span() else { return ConfigError::File(format!("{}: {}", self.name, e.message())) };
        let line = line_at(&self.text, span.start);
        match self.key_at(span.start) {
            Some(key) => {
                ConfigError::Value { key, at: Some((self.name.clone(), line)), reason: e.message().to_string() }
            }
            None => ConfigError::File(format!("{}:{line}: {}", self.name, e.message())),
        }
    }
}

/// The line (from 1) of byte `offset` of `text`.
fn line_at(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1
}

/// SigComp toward the terminals.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SigcompConfig {
    /// decompression_memory_size offered (RFC 3320 §3.3.1; RFC 5049 §3.1:
    /// at least 8192 for SIP).
    pub dms: u32,
    /// state_memory_size per compartment (RFC 5049 §3.2: at least 2048).
    pub sms: u32,
    /// cycles_per_bit: 16, 32, 64 or 128. It bounds every message's UDVM
    /// cycles (RFC 3320 §8.6).
    pub cpb: u16,
    /// lzss, deflate or lz77 (those this build of sigcomp-compress has).
    #[serde(deserialize_with = "algorithm_named")]
    pub algorithm: Algorithm,
    /// basic, static, dynamic or shared (RFC 3321).
    #[serde(deserialize_with = "mechanism_named")]
    pub mechanism: Mechanism,
    /// Compression level, 1 (fastest: a greedy parse over short hash
    /// chains, for a proxy short of CPU) to 9 (smallest); default 6, the
    /// exact shortest-path parse.
    #[serde(deserialize_with = "level_numbered")]
    pub level: Level,
    /// What a terminal is assumed to offer until it announces its own
    /// parameters: RFC 5049 §3 minimums by default.
    /// This is the terminal's decompression_memory_size: the memory for one
    /// message the proxy sends it, the message and its UDVM's (RFC 3320
    /// §3.3.1, §7); default 8192 (RFC 5049 §3.1).
    pub assumed_dms: u32,
    /// A terminal's state_memory_size until it announces its own; bounds
    /// the state the proxy's compressor creates at the terminal. Default
    /// 2048 (RFC 5049 §3.2).
    pub assumed_sms: u32,
    /// A terminal's cycles_per_bit until it announces its own; bounds the
    /// UDVM cycles the proxy's bytecode may take at the terminal (RFC 3320
    /// §8.6). Default 16, RFC 3320 §3.3.1's least.
    pub assumed_cpb: u16,
    /// At most this many compartments; the least recently used is closed
    /// beyond it.
    pub max_compartments: usize,
    /// At most this many bytes of state over all compartments, in real
    /// memory: each state's bytes and 400 for its entry and index (RFC
    /// 3320 §6.2 counts 64, which an adversary's empty states would
    /// multiply).
    pub max_state_bytes: usize,
    /// A compartment with no message for this many seconds is closed
    /// (besides ending with its registration).
    pub idle_timeout_s: u64,
    /// How many of the most recently active compartments keep their
    /// compressor's scratch and unpacked states (about 80 kB each); the
    /// others keep their states packed (about a third of their size) and
    /// unpack them at their next message. Split evenly among the worker
    /// threads' shards, like the limits.
    pub hot_compartments: usize,
}

/// One of `all` by its name; another name is refused with the names
/// there are.
fn one_of<'de, D: Deserializer<'de>, T: Copy>(d: D, all: &[T], name: fn(T) -> &'static str) -> Result<T, D::Error> {
    let s = String::deserialize(d)?;
    all.iter().copied().find(|&v| name(v) == s).ok_or_else(|| {
        let names: Vec<&str> = all.iter().map(|&v| name(v)).collect();
        D::Error::custom(format!("{s:?} is not one of {}", names.join(", ")))
    })
}

/// An optional `HOST:PORT`, its name resolved.
fn some_host_port<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SocketAddr>, D::Error> {
    let s = String::deserialize(d)?;
    host_port(&s).map(Some).map_err(D::Error::custom)
}

fn algorithm_named<'de, D: Deserializer<'de>>(d: D) -> Result<Algorithm, D::Error> {
    one_of(d, Algorithm::ALL, Algorithm::name)
}

fn mechanism_named<'de, D: Deserializer<'de>>(d: D) -> Result<Mechanism, D::Error> {
    one_of(d, &Mechanism::ALL, Mechanism::name)
}

fn level_numbered<'de, D: Deserializer<'de>>(d: D) -> Result<Level, D::Error> {
    Level::try_from(u8::deserialize(d)?).map_err(D::Error::custom)
}

/// Limits on what the proxy spends decompressing: per source address, and
/// overall with a share for unknown sources (a looping bytecode costs up to
/// its whole cycle budget, RFC 3320 §8.6; [`crate::defence`] has the
/// policy).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DefenceConfig {
    /// UDVM cycles per second one source IP address may use; a message
    /// whose worst-case cycles do not fit is dropped unread.
    pub cycles_per_source_per_s: u64,
    /// Burst allowance in cycles (the bucket's size).
    pub cycles_burst: u64,
    /// SigComp messages per second one source IP address may send.
    pub messages_per_source_per_s: u64,
    /// Burst allowance in messages (the bucket's size). Messages over
    /// either per-source budget show as `sigkit_proxy_refused{budget}`.
    pub messages_burst: u64,
    /// Source addresses tracked at once (least recently seen forgotten).
    pub max_sources: usize,
    /// A message is charged the larger of its cycles and its measured time
    /// divided by this: an instruction that costs more time than its cycle
    /// count says is charged by its time.
    pub charge_ns_per_cycle: u64,
    /// Milliseconds of decompression per second for the whole proxy (split
    /// evenly among its shards): what many sources together may use.
    pub decompression_ms_per_s: u64,
    /// Burst allowance of that budget, in milliseconds.
    pub decompression_burst_ms: u64,
    /// Percentage of that budget that sources the proxy does not know (no
    /// accepted SigComp message, no registration) may use; they also wait
    /// while less than half of the burst is left, which is kept for the
    /// terminals the proxy knows.
    pub unknown_sources_percent: u8,
}

/// Terminals' TCP connections (docs/deploy.md, "TCP limits"). A
/// connection costs a descriptor, a few kB while idle, and what it buffers
/// toward its next message; these bound all three.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TcpConfig {
    /// At most this many connections; a new one beyond it closes the least
    /// recently active (those that never carried a whole message first).
    pub max_connections: usize,
    /// At most this many from one source IP address (IPv6: one /64); a new
    /// one beyond it is refused.
    pub max_connections_per_source: usize,
    /// Bytes a connection may hold toward its next message (the SIP or
    /// SigComp message it is receiving); a connection past it is closed.
    pub max_buffered_bytes: usize,
    /// A connection that sent no byte for this many seconds is closed,
    /// unless a registration made over it still lasts (then at the first
    /// timeout after it expires). RFC 5626 §4.4.1 has terminals send a
    /// CRLF keep-alive at most every 840 seconds by default, so it must
    /// stay above that.
    pub idle_timeout_s: u64,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            max_connections: 32_768,
            max_connections_per_source: 128,
            max_buffered_bytes: 1 << 16,
            idle_timeout_s: 900,
        }
    }
}

impl TcpConfig {
    /// [`TcpConfig::idle_timeout_s`] as a [`Duration`].
    pub fn idle_timeout(&self) -> Duration {
        Duration::from_secs(self.idle_timeout_s)
    }

    /// The first key whose value cannot be used, and why.
    fn check(&self) -> Result<(), (&'static str, String)> {
        for (key, v) in [
            ("max_connections", self.max_connections as u64),
            ("max_connections_per_source", self.max_connections_per_source as u64),
            ("idle_timeout_s", self.idle_timeout_s),
        ] {
            if v == 0 {
                return Err((key, "must be at least 1".into()));
            }
        }
        if self.max_buffered_bytes < 1024 {
            return Err(("max_buffered_bytes", format!("{} is below 1024", self.max_buffered_bytes)));
        }
        Ok(())
    }
}

impl Default for ProxyConfig {
    fn default() -> Self {
        ProxyConfig {
            listen: Vec::new(),
            upstream: None,
            upstream_local: None,
            route_terminal: None,
            route_upstream: None,
            sigcomp_id: "urn:uuid:5d5c1f3e-6b7a-4c2e-9f1d-5349474b4954".into(),
            sigcomp: SigcompConfig::default(),
            defence: DefenceConfig::default(),
            stateful: false,
            overload: crate::overload::OverloadConfig::default(),
            metrics: None,
            threads: 0,
            shards: 0,
            udp_receive_buffer: 4 << 20,
            max_flows: 1_000_000,
            flow_idle_timeout_s: 3600,
            max_pending_registers: 100_000,
            max_pending_registers_per_source: 32,
            max_pending_state_bytes: 64 << 20,
            max_registrations: 1_000_000,
            tcp: TcpConfig::default(),
            hep: None,
            hep_id: 1,
            hep_auth_key: None,
            capture: None,
            capture_queue: 65_536,
            source: None,
        }
    }
}

/// At most this many shards: each is a whole proxy with its own tables.
pub const MAX_SHARDS: usize = 1024;

impl Default for SigcompConfig {
    fn default() -> Self {
        SigcompConfig {
            dms: 16384,
            sms: 16384,
            cpb: 16,
            algorithm: Algorithm::Lzss,
            mechanism: Mechanism::Dynamic,
            level: Level::DEFAULT,
            assumed_dms: 8192,
            assumed_sms: 2048,
            assumed_cpb: 16,
            max_compartments: Limits::default().max_compartments,
            max_state_bytes: Limits::default().max_state_bytes,
            idle_timeout_s: 3600,
            hot_compartments: 1024,
        }
    }
}

impl Default for DefenceConfig {
    fn default() -> Self {
        // A SIP terminal sends a few messages a second; at 16 cycles per
        // bit a 1,500-byte message may take up to 208,000 cycles, so this
        // lets a terminal send about ten a second at their worst, twenty in
        // a burst, and costs the proxy a few percent of a core per source
        // at most. A message over ~30 KB never fits the burst and is refused.
        DefenceConfig {
            cycles_per_source_per_s: 2_000_000,
            cycles_burst: 4_000_000,
            messages_per_source_per_s: 200,
            messages_burst: 400,
            max_sources: 1_000_000,
            // The dearest UDVM cycle is held to 60 ns (BENCHMARKS.md,
            // "Decompressor core"); an ordinary one costs under 1 ns.
            charge_ns_per_cycle: 60,
            // Half a core: decompressing a typical 700-byte message takes
            // about 6 µs, so this is about 80,000 messages a second.
            decompression_ms_per_s: 500,
            decompression_burst_ms: 100,
            unknown_sources_percent: 20,
        }
    }
}

/// A configuration that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The file is not valid TOML or has an unknown key or a bad value;
    /// the message names the line.
    #[error("{0}")]
    File(String),
    /// A key's value is outside what the proxy supports. `at` is the file
    /// and line of the value when it came from a file.
    #[error("{}{key}: {reason}", file_line(.at))]
    Value {
        /// The key, `name` or `table.name`.
        key: String,
        /// The file's name and the value's line (from 1); `None` when the
        /// value came from the command line or no file.
        at: Option<(String, usize)>,
        /// What is wrong with the value, and the bound it missed.
        reason: String,
    },
    /// No `listen` address: the proxy would have no socket toward
    /// terminals.
    #[error("no listen address (listen = [\"udp:0.0.0.0:5060\"])")]
    NoListen,
    /// No `upstream`: the proxy would have nowhere to send requests.
    #[error("no upstream (upstream = \"udp:127.0.0.1:5070\")")]
    NoUpstream,
    /// The `sigcomp` table's parameters are not ones RFC 3320 §3.3.1
    /// allows.
    #[error("sigcomp: {0}")]
    SigcompParams(#[source] ParamError),
    /// The SigComp endpoint refused the `sigcomp` table.
    #[error("sigcomp: {0}")]
    Sigcomp(#[from] EndpointError),
}

impl ConfigError {
    /// Whether the configuration is well formed and a name in it (a
    /// `listen` address's host) did not resolve: the network's failure,
    /// not the file's. TOML hands a value's error over as its text, which
    /// [`HostPortError::Resolve`] starts with [`CANNOT_RESOLVE`].
    pub fn is_resolution(&self) -> bool {
        matches!(self, ConfigError::Value { reason, .. } if reason.contains(CANNOT_RESOLVE))
    }
}

/// `FILE:LINE: ` before a value's error, when it came from a file.
fn file_line(at: &Option<(String, usize)>) -> String {
    at.as_ref().map_or_else(String::new, |(file, line)| format!("{file}:{line}: "))
}

impl ProxyConfig {
    /// Parses a configuration file's text; `name` names it in errors.
    pub fn from_toml(name: &str, text: &str) -> Result<ProxyConfig, ConfigError> {
        let source = ConfigSource { name: name.to_string(), text: text.to_string(), overridden: Vec::new() };
        let mut config: ProxyConfig = toml::from_str(text).map_err(|e| source.toml_error(&e))?;
        config.source = Some(Arc::new(source));
        Ok(config)
    }

    /// Records that `key`'s value no longer comes from the file.
    pub fn overridden(&mut self, key: &str) {
        if let Some(s) = self.source.as_mut() {
            Arc::make_mut(s).overridden.push(key.to_string());
        }
    }

    /// The error for `key`'s value, with its file and line when it came
    /// from a file.
    fn bad_value(&self, key: &str, reason: String) -> ConfigError {
        let at = self.source.as_ref().and_then(|s| Some((s.name.clone(), s.line_of(key)?)));
        ConfigError::Value { key: key.to_string(), at, reason }
    }

    /// Checks what TOML cannot: the SigComp values and the addresses.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, reason: String| Err(self.bad_value(key, reason));
        if self.listen.is_empty() {
            return Err(ConfigError::NoListen);
        }
        let Some(upstream) = &self.upstream else {
            return Err(ConfigError::NoUpstream);
        };
        // The runtime has one UDP socket toward the upstream; a TCP
        // upstream would need connections, their framing (RFC 3261
        // §18.3) and their failures handled, which it does not do.
        if upstream.transport() == Some(SipTransport::Tcp) {
            return bad(
                "upstream",
                format!(
                    "{upstream}: a TCP upstream is not supported; the proxy speaks UDP to its upstream (udp:HOST:PORT)"
                ),
            );
        }
        if self.shards > MAX_SHARDS {
            return bad("shards", format!("{} shards: at most {MAX_SHARDS}", self.shards));
        }
        let s = &self.sigcomp;
        // RFC 3320 §3.3.1: each parameter has a few encodable values.
        for (prefix, p) in [("sigcomp.", self.local_params()), ("sigcomp.assumed_", self.assumed_peer())] {
            let Err(e) = p.validate() else { continue };
            let key = match e {
                ParamError::DecompressionMemorySize(_) => "dms",
                ParamError::StateMemorySize(_) => "sms",
                ParamError::CyclesPerBit(_) => "cpb",
                ParamError::Version0 => return Err(ConfigError::SigcompParams(e)),
            };
            return bad(&format!("{prefix}{key}"), e.to_string());
        }
        if s.dms < 8192 {
            return bad("sigcomp.dms", format!("{} is below 8192, the SIP minimum (RFC 5049 §3.1)", s.dms));
        }
        if s.sms < 2048 {
            return bad("sigcomp.sms", format!("{} is below 2048, the SIP minimum (RFC 5049 §3.2)", s.sms));
        }
        if !self.sigcomp_id.starts_with("urn:") {
            return bad("sigcomp_id", format!("{:?} is not a URN (RFC 5049 §6.1)", self.sigcomp_id));
        }
        if s.max_compartments == 0 {
            return bad("sigcomp.max_compartments", "must be at least 1".into());
        }
        for (key, v) in [
            ("max_flows", self.max_flows),
            ("max_pending_registers", self.max_pending_registers),
            ("max_pending_registers_per_source", self.max_pending_registers_per_source),
            ("max_registrations", self.max_registrations),
        ] {
            if v == 0 {
                return bad(key, "must be at least 1".into());
            }
        }
        let d = &self.defence;
        if d.charge_ns_per_cycle == 0 {
            return bad("defence.charge_ns_per_cycle", "must be at least 1".into());
        }
        if d.decompression_ms_per_s == 0 || d.decompression_burst_ms == 0 {
            let key = if d.decompression_ms_per_s == 0 { "decompression_ms_per_s" } else { "decompression_burst_ms" };
            return bad(&format!("defence.{key}"), "must be at least 1".into());
        }
        if d.unknown_sources_percent > 100 {
            return bad("defence.unknown_sources_percent", format!("{} is over 100", d.unknown_sources_percent));
        }
        if let Err((key, reason)) = self.overload.check(self.stateful) {
            return bad(&format!("overload.{key}"), reason);
        }
        if let Err((key, reason)) = self.tcp.check() {
            return bad(&format!("tcp.{key}"), reason);
        }
        if self.capture_queue == 0 {
            return bad("capture_queue", "must be at least 1".into());
        }
        Ok(())
    }

    /// What the proxy offers terminals.
    pub fn local_params(&self) -> Params {
        Params { dms: self.sigcomp.dms, sms: self.sigcomp.sms, cpb: self.sigcomp.cpb, version: 2 }
    }

    /// What a terminal is assumed to offer until it says.
    pub fn assumed_peer(&self) -> Params {
        Params {
            dms: self.sigcomp.assumed_dms,
            sms: self.sigcomp.assumed_sms,
            cpb: self.sigcomp.assumed_cpb,
            version: 2,
        }
    }

    /// The compressor settings.
    pub fn compressor(&self) -> CompressorConfig {
        CompressorConfig {
            algorithm: self.sigcomp.algorithm,
            mechanism: self.sigcomp.mechanism,
            level: self.sigcomp.level,
            ..CompressorConfig::default()
        }
    }

    /// The SigComp endpoint's caps on compartments and state, from
    /// `sigcomp.max_compartments` and `sigcomp.max_state_bytes`, for the
    /// whole proxy ([`crate::core::Proxy::sharded`] gives each shard its
    /// share, rounded up).
    pub fn limits(&self) -> Limits {
        Limits { max_compartments: self.sigcomp.max_compartments, max_state_bytes: self.sigcomp.max_state_bytes }
    }

    /// `sigcomp.idle_timeout_s` as a [`Duration`]: how long a compartment
    /// may go without a message before it is closed
    /// (`sigkit_proxy_compartments_closed{cause="idle"}`).
    pub fn idle_timeout(&self) -> Duration {
        Duration::from_secs(self.sigcomp.idle_timeout_s)
    }

    /// `flow_idle_timeout_s` as a [`Duration`]: how long a flow without a
    /// live registration may go without a message before it is forgotten.
    pub fn flow_idle_timeout(&self) -> Duration {
        Duration::from_secs(self.flow_idle_timeout_s)
    }
}

#[cfg(test)]
mod tests;
