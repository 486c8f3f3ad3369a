//! A SigComp endpoint: the decompressor for what the peer sends and a
//! compressor per compartment for what we send, tied together by feedback
//! (RFC 3320 §3.2, §6.3), shared states (RFC 3321) and NACKs (RFC 4077).

use std::collections::HashMap;

use sigcomp::{CompartmentId, Decompressor, Failure, Nack, Params, Transport};

use crate::compressor::{CompressError, Compressed, Compressor, Config, Mechanism};

/// What receiving one SigComp message gave.
#[derive(Debug, Clone)]
pub enum Received {
    /// A decompressed application message.
    Message { output: Vec<u8>, cycles: u64 },
    /// A NACK for a message we sent; the compressor has adjusted.
    Nack(sigcomp::NackReport),
}

/// A failure to decompress, with the NACK to send back (RFC 4077 §2.2).
#[derive(Debug, Clone)]
pub struct ReceiveError {
    pub failure: Failure,
    pub nack: Option<Vec<u8>>,
}

pub struct Endpoint {
    local: Params,
    peer: Params,
    config: Config,
    decompressor: Decompressor,
    compressors: HashMap<CompartmentId, Compressor>,
    /// Our own shared state per compartment (the last message we announced).
    own_shared: HashMap<CompartmentId, sigcomp::StateId>,
}

impl Endpoint {
    /// An endpoint offering `local` to its peers, expecting peers to offer
    /// `peer` (until their feedback says otherwise), compressing with
    /// `config`.
    pub fn new(local: Params, peer: Params, config: Config) -> Result<Endpoint, CompressError> {
        let decompressor =
            Decompressor::new(local).map_err(|_| CompressError::PeerTooSmall { dms: local.dms })?;
        Ok(Endpoint {
            local,
            peer,
            config,
            decompressor,
            compressors: HashMap::new(),
            own_shared: HashMap::new(),
        })
    }

    pub fn decompressor(&self) -> &Decompressor {
        &self.decompressor
    }

    pub fn compressor(&self, compartment: CompartmentId) -> Option<&Compressor> {
        self.compressors.get(&compartment)
    }

    fn compressor_mut(&mut self, compartment: CompartmentId) -> Result<&mut Compressor, CompressError> {
        if !self.compressors.contains_key(&compartment) {
            let c = Compressor::new(self.config, self.peer, self.local)?;
            self.compressors.insert(compartment, c);
        }
        Ok(self.compressors.get_mut(&compartment).expect("inserted above"))
    }

    /// Compresses `message` for the peer of `compartment`.
    pub fn compress(&mut self, compartment: CompartmentId, message: &[u8]) -> Result<Compressed, CompressError> {
        let returned = self
            .decompressor
            .feedback(compartment)
            .and_then(|f| f.requested_item.clone());
        // Shared mode: announce the message only if saving it here evicts
        // nothing the peer created (RFC 4896 §5.3: one such state at most).
        let shared = self.config.mechanism == Mechanism::Shared;
        let mut announce = false;
        if shared {
            let cost = message.len() as u32 + 64;
            let (used, sms, old_cost) = match self.decompressor.states().compartment(compartment) {
                Some(c) => {
                    let old = self.own_shared.get(&compartment);
                    let old_cost = c.entries.iter().find(|e| Some(&e.id) == old).map(|e| e.cost).unwrap_or(0);
                    (c.used, c.sms, old_cost)
                }
                None => (0, self.local.sms, 0),
            };
            announce = used - old_cost + cost <= sms;
        }
        let c = self.compressor_mut(compartment)?;
        let out = c.compress(message, returned.as_deref(), announce)?;
        if let Some(state) = &out.announced {
            let states = self.decompressor.states_mut();
            if let Some(old) = self.own_shared.remove(&compartment) {
                states.free(compartment, &old.0);
            }
            states.create(compartment, 0, 0, 6, &state.value, 65535);
            self.own_shared.insert(compartment, state.id);
        }
        Ok(out)
    }

    /// Receives one SigComp message (for a stream, one unframed message)
    /// from the peer of `compartment`, which the application accepts.
    pub fn receive(&mut self, compartment: CompartmentId, msg: &[u8]) -> Result<Received, ReceiveError> {
        if let Ok(nack) = Nack::parse(msg) {
            let _ = nack;
            let report = self
                .compressor_mut(compartment)
                .ok()
                .and_then(|c| c.on_nack(msg).ok())
                .ok_or_else(|| ReceiveError { failure: Failure { reason: sigcomp::Reason::InternalError, opcode: 0, pc: 0, details: vec![], cycles: 0 }, nack: None })?;
            return Ok(Received::Nack(report));
        }
        let transport = self.config.transport;
        let d = match self.decompressor.decompress(msg, transport) {
            Ok(d) => d,
            Err(failure) => {
                let nack = self.decompressor.nack_for(msg, &failure);
                return Err(ReceiveError { failure, nack });
            }
        };
        let returned_item = d.pending.returned_feedback.clone();
        let announced: Vec<Vec<u8>> = d
            .pending
            .returned_parameters
            .as_ref()
            .map(|p| p.local_states.clone())
            .unwrap_or_default();
        let output = d.output;
        let cycles = d.cycles;
        self.decompressor.accept(d.pending, compartment);
        if let Ok(c) = self.compressor_mut(compartment) {
            if let Some(item) = returned_item {
                c.on_returned_feedback(&item);
            }
            for id in announced {
                c.on_peer_shared_state(&output, &id);
            }
        }
        Ok(Received::Message { output, cycles })
    }

    /// The transport this endpoint's compressors assume.
    pub fn transport(&self) -> Transport {
        self.config.transport
    }
}
