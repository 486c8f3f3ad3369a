//! What the peer tells the compressor about its state: acknowledgements
//! of the states a message created (returned feedback, RFC 3320 §5.1,
//! RFC 3321 §5.1), the states it announces, and NACKs (RFC 4077), after
//! which the compressor falls back to what needs no state of the peer's.

use super::*;

impl Compressor {
    /// The peer announced a locally available state with this partial
    /// identifier; returns whether it is our bytecode (which we then stop
    /// uploading).
    pub fn on_peer_local_state(&mut self, announced: &[u8]) -> bool {
        self.unpack_states();
        if announced.len() < 6 || !self.bytecode.state_id.0.starts_with(announced) {
            return false;
        }
        if self.config.mechanism != Mechanism::Basic && !self.peer_has_bytecode {
            let state = self.bytecode_state();
            self.model.states_mut().add_local(state);
            self.peer_has_bytecode = true;
        }
        true
    }

    /// The peer echoed a feedback item we requested (RFC 3320 §5): the
    /// message that carried it was decompressed and its states created.
    pub fn on_returned_feedback(&mut self, item: &[u8]) {
        self.unpack_states();
        // The message carried our announcements too.
        self.announce_bytecode = false;
        if let [b] = item {
            if let Some(ids) = self.awaiting.remove(b) {
                self.stream_states_declined = false;
                self.order_as_acknowledged(*b, &ids);
                for id in &ids {
                    if *id == self.bytecode.state_id {
                        self.bytecode_usable = true;
                    }
                    if let Some(s) = self.snapshots.iter_mut().find(|s| s.id == *id) {
                        s.usable = true;
                    }
                }
                if self.acknowledged.len() == ACKNOWLEDGED_KEPT {
                    self.acknowledged.pop_front();
                }
                self.acknowledged.push_back((*b, ids));
                self.forget_superseded();
            }
        }
    }

    /// The model assumes the peer creates states in the order their
    /// messages were sent. Over UDP they may arrive in another (RFC 3320
    /// §5.1 leaves that to the compressor): the acknowledgement of item
    /// `item` after that of an item sent later shows the peer created
    /// `ids` after that item's states. The model's ages and the snapshots'
    /// order follow the peer, so that the peer's oldest snapshot is evicted
    /// first in the model too and the youngest is the base.
    pub(super) fn order_as_acknowledged(&mut self, item: u8, ids: &[StateId]) {
        let sent_later: Vec<StateId> = self
            .acknowledged
            .iter()
            .filter(|(j, _)| (1..64).contains(&(j.wrapping_sub(item) % 128)))
            .flat_map(|(_, states)| states.iter().copied())
            .collect();
        if sent_later.is_empty() {
            return;
        }
        self.peer_states.created_after(ids, &sent_later);
        // (An item long acknowledged whose number has come round again
        // names snapshots gone from the list: nothing moves.)
        place_after_last_anchor(&mut self.snapshots, |s| ids.contains(&s.id), |s| sent_later.contains(&s.id));
    }

    /// Snapshots older than the newest usable one are never continued from
    /// again (the newest usable is always the base, and the peer evicts
    /// older ones first), yet the peer keeps them until evicted: the model
    /// keeps their identifiers and sizes for its accounting
    /// ([`Compressor::peer_states`]), not their bytes.
    pub(super) fn forget_superseded(&mut self) {
        let Some(newest) = self.snapshots.iter().rposition(|s| s.usable) else { return };
        for s in &self.snapshots[..newest] {
            self.model.states_mut().free(MODEL, &s.id.0);
        }
    }

    /// The peer frees state `id`: the model forgets it and its bytes.
    pub(super) fn model_free(&mut self, id: &StateId) {
        self.peer_states.free(id);
        self.model.states_mut().free(MODEL, &id.0);
    }

    /// The peer saved a message it sent us as a shared state and announced
    /// its identifier (RFC 3321 shared mode). `message` is what we
    /// decompressed; `announced` the partial identifier in the returned
    /// parameters. Returns whether they match.
    pub fn on_peer_shared_state(&mut self, message: &[u8], announced: &[u8]) -> bool {
        self.unpack_states();
        let state = State::new(0, 0, 6, message);
        if announced.len() < 6 || !state.id.0.starts_with(announced) {
            return false;
        }
        // Model the peer's local creation (priority 65535: freed first).
        if let Some(old) = self.peer_shared.take() {
            self.model_free(&old);
        }
        let id = state.id;
        self.model_create(vec![(state, 65535)]);
        if self.in_model(&id) {
            self.peer_shared = Some(id);
        }
        true
    }

    /// A NACK from the peer (RFC 4077 §2.3). The compressor falls back to
    /// what needs no state of the peer's but the dictionary: every snapshot,
    /// the bytecode state and the peer's shared state are forgotten (and
    /// dropped from the model), so the next message uploads the bytecode
    /// and decompresses whatever the peer lost.
    pub fn on_nack(&mut self, nack: &[u8]) -> Result<NackReport, NackParseError> {
        self.unpack_states();
        let report = self.sent.on_nack(nack)?;
        if self.config.transport == Transport::Stream && report.nack.reason == sigcomp::Reason::StateNotFound {
            self.stream_states_declined = true;
        }
        let mut gone: Vec<StateId> = self.snapshots.iter().map(|s| s.id).collect();
        gone.push(self.bytecode.state_id);
        gone.extend(self.peer_shared.take());
        gone.extend(report.lost_states.iter().copied());
        gone.extend(report.not_created.iter().copied());
        for id in gone {
            self.model_free(&id);
        }
        self.snapshots.clear();
        self.bytecode_usable = false;
        self.awaiting.clear();
        self.acknowledged.clear();
        Ok(report)
    }

    /// Whether a message's states are the peer's as soon as it is sent:
    /// over a stream whose peer has not declined them.
    pub(super) fn kept_once_sent(&self) -> bool {
        self.config.transport == Transport::Stream && !self.stream_states_declined
    }
}
