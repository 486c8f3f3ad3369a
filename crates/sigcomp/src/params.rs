//! SigComp parameters (RFC 3320 §3.3) and their feedback encodings.

use std::fmt;

/// The parameters an endpoint offers when it receives SigComp messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// decompression_memory_size in bytes: 2048, 4096, …, 131072.
    pub dms: u32,
    /// state_memory_size per compartment in bytes: 0, 2048, …, 131072.
    pub sms: u32,
    /// cycles_per_bit: 16, 32, 64 or 128.
    pub cpb: u16,
    /// SigComp_version: 0x01 basic, 0x02 with NACK (RFC 4077 §2.4).
    pub version: u8,
}

impl Default for Params {
    fn default() -> Self {
        Params { dms: 8192, sms: 8192, cpb: 16, version: 2 }
    }
}

/// A parameter value outside the set RFC 3320 §3.3.1 allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamError {
    /// decompression_memory_size not one of 2048, 4096, …, 131072.
    DecompressionMemorySize(u32),
    /// state_memory_size not one of 0, 2048, 4096, …, 131072.
    StateMemorySize(u32),
    /// cycles_per_bit not one of 16, 32, 64, 128.
    CyclesPerBit(u16),
    /// SigComp_version 0 (versions start at 1, RFC 3320 §3.3.2).
    Version0,
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamError::DecompressionMemorySize(v) => {
                write!(f, "decompression memory size {v} is not one of 2048, 4096, ..., 131072")
            }
            ParamError::StateMemorySize(v) => {
                write!(f, "state memory size {v} is not one of 0, 2048, 4096, ..., 131072")
            }
            ParamError::CyclesPerBit(v) => write!(f, "cycles per bit {v} is not one of 16, 32, 64, 128"),
            ParamError::Version0 => f.write_str("SigComp version 0 does not exist"),
        }
    }
}

impl std::error::Error for ParamError {}

impl Params {
    /// Checks every parameter against RFC 3320 §3.3.1, in the order dms,
    /// sms, cpb, version: the first invalid one is the error.
    pub fn validate(&self) -> Result<(), ParamError> {
        if encode_memory_size(self.dms).is_none() || self.dms == 0 {
            return Err(ParamError::DecompressionMemorySize(self.dms));
        }
        if encode_memory_size(self.sms).is_none() {
            return Err(ParamError::StateMemorySize(self.sms));
        }
        if encode_cpb(self.cpb).is_none() {
            return Err(ParamError::CyclesPerBit(self.cpb));
        }
        if self.version == 0 {
            return Err(ParamError::Version0);
        }
        Ok(())
    }

    /// The first byte of the returned SigComp parameters (RFC 3320 Figure 13).
    pub fn encode_byte(&self) -> u8 {
        let cpb = encode_cpb(self.cpb).unwrap_or(0);
        let dms = encode_memory_size(self.dms).unwrap_or(1);
        let sms = encode_memory_size(self.sms).unwrap_or(0);
        (cpb << 6) | (dms << 3) | sms
    }
}

/// cycles_per_bit encoding (2 bits).
pub fn encode_cpb(cpb: u16) -> Option<u8> {
    match cpb {
        16 => Some(0),
        32 => Some(1),
        64 => Some(2),
        128 => Some(3),
        _ => None,
    }
}

/// The cycles_per_bit the 2-bit field encodes: 16, 32, 64 or 128
/// (RFC 3320 §3.3.1); bits above the lowest two are ignored.
pub fn decode_cpb(bits: u8) -> u16 {
    16 << (bits & 3)
}

/// state/decompression memory size encoding (3 bits).
pub fn encode_memory_size(size: u32) -> Option<u8> {
    match size {
        0 => Some(0),
        2048 | 4096 | 8192 | 16384 | 32768 | 65536 | 131072 => Some((size.trailing_zeros() - 10) as u8),
        _ => None,
    }
}

/// The state or decompression memory size the 3-bit field encodes: 0, or
/// 2048 to 131072 bytes (RFC 3320 §3.3.1); bits above the lowest three are
/// ignored.
pub fn decode_memory_size(bits: u8) -> u32 {
    match bits & 7 {
        0 => 0,
        b => 1024 << b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_match_rfc3320_table() {
        assert_eq!(encode_memory_size(2048), Some(1));
        assert_eq!(encode_memory_size(131072), Some(7));
        assert_eq!(encode_memory_size(3000), None);
        for b in 0..8 {
            assert_eq!(encode_memory_size(decode_memory_size(b)), Some(b));
        }
        for b in 0..4 {
            assert_eq!(encode_cpb(decode_cpb(b)), Some(b));
        }
        let p = Params { dms: 8192, sms: 2048, cpb: 64, version: 1 };
        assert_eq!(p.encode_byte(), 0b10_011_001);
    }

    #[test]
    fn validation_rejects_odd_sizes() {
        assert!(Params::default().validate().is_ok());
        let invalid = |p: Params| p.validate().unwrap_err();
        assert_eq!(invalid(Params { dms: 1000, ..Params::default() }), ParamError::DecompressionMemorySize(1000));
        assert_eq!(invalid(Params { dms: 0, ..Params::default() }), ParamError::DecompressionMemorySize(0));
        assert_eq!(invalid(Params { sms: 100, ..Params::default() }), ParamError::StateMemorySize(100));
        assert_eq!(invalid(Params { cpb: 17, ..Params::default() }), ParamError::CyclesPerBit(17));
        assert_eq!(invalid(Params { version: 0, ..Params::default() }), ParamError::Version0);
        assert!(Params { sms: 0, ..Params::default() }.validate().is_ok());
        assert_eq!(ParamError::CyclesPerBit(17).to_string(), "cycles per bit 17 is not one of 16, 32, 64, 128");
    }
}
