; sigkit mechanism program: the part of every sigkit decompressor that
; carries out the SigComp mechanisms (RFC 3320 §5, RFC 3321 as the 2005 SigComp performance thesis
; §3.4–3.5 and §7.11 describe them, with RFC 4896's corrections). The token
; decoder of one algorithm (asm/lzss.asm, asm/deflate.asm, asm/lz77.asm) is
; spliced in by build.rs at the three placeholders (the contract between
; the two is in asm/README.md).
;
; build.rs assembles one image per algorithm and mechanism, and for dynamic
; and shared a second one with short snapshots (`dynamic_short`,
; `shared_short`, see below): lines between `; @@IF m1 m2 ...` and
; `; @@ENDIF` are kept only for the programs named, so a peer receives only
; the code its mechanism needs (the bytecode is part of the first messages'
; size).
;
; The circular buffer (RFC 3320 §8.4) holds a part of the RFC 3485 SIP/SDP
; dictionary (or a user dictionary state), earlier messages and shared
; states. Every SigComp message that runs this bytecode starts its
; compressed data with one flags byte; the items of the set flags follow
; in this order:
;   0x80  shared: a state of the sender's (6-byte partial identifier,
;         2-byte offset, 2-byte length) is appended to the circular buffer
;         (RFC 3321 shared mode; the compressor picks the useful part)
;   0x40  a 1-byte feedback item, requested back as feedback (RFC 3320
;         §9.4.9): its return tells the compressor that this message was
;         decompressed and its states created
;   0x20  a 7-byte entry (length 6, partial identifier) announced in the
;         returned parameters (RFC 3320 §9.4.9, locally available states):
;         the identifier of this message, which the sender saved as a
;         shared state (State(address 0, instruction 0, minimum access
;         length 6, the message); shared mode), or of the sender's own
;         bytecode, which it holds as a local state so that a peer with the
;         same bytecode need not upload it
;   0x10  a second such entry (the first must be present)
;   0x08  static: save the bytecode as state
;   0x04  dynamic, shared: save no snapshot of this message (see below)
;   0x02  dynamic_short, shared_short: a short snapshot (see below)
; then the algorithm's tokens up to the end of the message. Dynamic and
; shared save the UDVM memory from address 64 as state at every message
; (the snapshot): a later message names it in its header and continues at
; :decompress. A message with 0x04 saves none: the flag is subtracted from
; the snapshot's minimum access length, and END-MESSAGE makes no state with
; a length below 6 (RFC 3320 §9.4.9).
;
; Short snapshots (the programs `dynamic_short` and `shared_short`, which
; the compressor uploads at its fast levels): the history fills the
; circular buffer from its start, and the dictionary part lies at its end,
; so that it precedes the first message in the buffer's circular order
; (the other programs load it at the buffer's start and write the history
; after it). Until the history first wraps, the memory past
; decompressed_pointer holds nothing but zeros and the part of the
; dictionary the history has not overwritten, which the peer holds as a
; state anyway. The compressor, which models the buffer, then sets 0x02:
; the snapshot ends at decompressed_pointer instead of buffer_end, and the
; message that continues from it loads that part of the dictionary again.
; Fewer bytes are hashed and stored per snapshot (RFC 3320 §9.4.9 lets
; END-MESSAGE save any part of memory), and the tokens are the same as with
; the whole buffer saved; the cost is about 80 bytes more of bytecode,
; uploaded once per compartment. Over a message transport the compressor uses a snapshot only
; once the peer has acknowledged it, and each new snapshot pushes older ones
; out of the peer's state memory (RFC 3320 §6.2); when several messages
; leave before an acknowledgement (100, 180 and 200 to one INVITE), saving
; each would push out the acknowledged snapshot they all continue from, so
; the compressor has them save nothing instead.
;
; The words between :params and :circular_buffer are set by the compressor.
;
; The flag bits, named for the compressor too (build.rs turns every `set`
; into a Rust constant, so the compressor writes the flags this program
; reads from this one definition):
set (flag_shared, 128)
set (flag_feedback, 64)
set (flag_announce_a, 32)
set (flag_announce_b, 16)
set (flag_save_bytecode, 8)
set (flag_no_snapshot, 4)
set (flag_short_snapshot, 2)
;
; The requested feedback (RFC 3320 §9.4.9): its first byte 0x04 (Q = 1, a
; requested_feedback_item follows; S = 0, I = 0), then the item.
set (requested_feedback_q, 1024)
;
; Retention priorities (RFC 3320 §6.2, RFC 4896 §5.1) and the minimum
; access length of the states this program creates:
set (state_min_access, 6)
set (bytecode_priority, 2)
set (snapshot_priority, 1)
;
; Cycles (RFC 3320 §9 costs) this program spends on one message outside
; the fragment's token loop, apart from the bytes its STATE-ACCESSes,
; STATE-CREATE and END-MESSAGE move: :init 7, :decompress 7, the shared
; flag 18, feedback 6, each announced entry 10, save_bytecode 2, no
; snapshot 1, END-MESSAGE 1, 62 in all; with short snapshots also the
; dictionary's reload 11, the snapshot flags 3 more and the snapshot's
; length 4, 80 in all. Rounded up, with room for the fragment's
; @init and the last input instruction of its token loop (the one that
; finds the input exhausted):
set (mechanism_cycles, 200)

readonly (0)
at (32)
:index                          pad (2)
:length_value                   pad (2)
:old_pointer                    pad (2)
:flags                          pad (1)
:flags_lsb                      pad (1)
:shared_id                      pad (6)
:shared_offset                  pad (2)
:shared_len                     pad (2)
:snap_len                       pad (2)
:reload_at                      pad (2)
:reload_begin                   pad (2)
:reload_len                     pad (2)

at (64)
:byte_copy_left                 pad (2)
:byte_copy_right                pad (2)
:input_bit_order                pad (2)
:decompressed_pointer           pad (2)
:fb_loc                         pad (2)
:snap_mal                       pad (2)
:returned_parameters_location   pad (1)
:returned_sigcomp_version       pad (1)
:announced_a                    pad (7)
:announced_b                    pad (7)
:announced_end                  pad (1)
:requested_feedback_location    pad (1)
:requested_feedback_item        pad (1)
:snap_short                     pad (2)
; @@VARS@@

align (64)
readonly (1)

:init
; @@IF basic static dynamic shared
MULTILOAD (64, 4, circular_buffer, $buffer_end, 0, $dict_end)
; @@ENDIF
; @@IF dynamic_short shared_short
MULTILOAD (64, 4, circular_buffer, $buffer_end, 0, circular_buffer)
; @@ENDIF
COMPARE ($dict_length, 0, load_dict, init_algorithm, load_dict)
:load_dict
; @@IF basic static dynamic shared
STATE-ACCESS (dictionary_id, 6, $dict_begin, $dict_length, circular_buffer, 0)
; @@ENDIF
; @@IF dynamic_short shared_short
STATE-ACCESS (dictionary_id, 6, $dict_begin, $dict_length, $dict_at, 0)
; @@ENDIF
:init_algorithm
; @@INIT@@

:decompress
; @@IF dynamic_short shared_short
; A short snapshot (flag_short_snapshot) ended at decompressed_pointer: the
; dictionary bytes from max(decompressed_pointer, dict_at) to buffer_end
; are loaded again.
COMPARE ($snap_short, 0, dictionary_in_place, dictionary_in_place, reload_dict)
:reload_dict
MULTILOAD (reload_at, 2, $dict_at, $dict_begin)
COMPARE ($decompressed_pointer, $dict_at, reload_length, reload_length, reload_from_pointer)
:reload_from_pointer
LOAD (reload_at, $decompressed_pointer)
ADD ($reload_begin, $decompressed_pointer)
SUBTRACT ($reload_begin, $dict_at)
:reload_length
LOAD (reload_len, $buffer_end)
SUBTRACT ($reload_len, $reload_at)
COMPARE ($reload_len, 0, dictionary_in_place, dictionary_in_place, reload_now)
:reload_now
STATE-ACCESS (dictionary_id, 6, $reload_begin, $reload_len, $reload_at, 0)
:dictionary_in_place
; @@ENDIF
; Per message: no feedback request, our parameters returned (RFC 3320
; §9.4.9, so the peer's compressor learns our DMS, SMS and cycles per bit)
; with no state identifiers, and the snapshot's minimum access length.
; @@IF basic static
MULTILOAD (fb_loc, 4, 0, 0, $announce_params, 0)
; @@ENDIF
; @@IF dynamic shared dynamic_short shared_short
MULTILOAD (fb_loc, 4, 0, state_min_access, $announce_params, 0)
; @@ENDIF
INPUT-BYTES (1, flags_lsb, fail)

; @@IF shared shared_short
COMPARE ($flags, flag_shared, after_shared, load_shared, load_shared)
:load_shared
SUBTRACT ($flags, flag_shared)
INPUT-BYTES (10, shared_id, fail)
STATE-ACCESS (shared_id, 6, $shared_offset, $shared_len, $decompressed_pointer, 0)
ADD ($decompressed_pointer, $shared_len)
COMPARE ($decompressed_pointer, $buffer_end, after_shared, wrap_shared, wrap_shared)
:wrap_shared
SUBTRACT ($decompressed_pointer, $buffer_size)
:after_shared
; @@ENDIF

; @@IF static dynamic shared dynamic_short shared_short
COMPARE ($flags, flag_feedback, after_feedback, feedback, feedback)
:feedback
SUBTRACT ($flags, flag_feedback)
LOAD (fb_loc, requested_feedback_location)
LOAD (requested_feedback_location, requested_feedback_q)
INPUT-BYTES (1, requested_feedback_item, fail)
:after_feedback
; @@ENDIF

; @@IF static dynamic shared dynamic_short shared_short
COMPARE ($flags, flag_announce_a, after_announce_a, announce_a, announce_a)
:announce_a
SUBTRACT ($flags, flag_announce_a)
INPUT-BYTES (7, announced_a, fail)
:after_announce_a
COMPARE ($flags, flag_announce_b, after_announce_b, announce_b, announce_b)
:announce_b
SUBTRACT ($flags, flag_announce_b)
INPUT-BYTES (7, announced_b, fail)
:after_announce_b
; @@ENDIF

; @@IF static
COMPARE ($flags, flag_save_bytecode, tokens, save_bytecode, save_bytecode)
:save_bytecode
STATE-CREATE ($code_length, init, init, state_min_access, bytecode_priority)
; @@ENDIF
; @@IF dynamic shared
; Only 0x04 is left of the flags here (0x08 is static's): 6 - 4 = 2.
SUBTRACT ($snap_mal, $flags)
; @@ENDIF
; @@IF dynamic_short shared_short
; Only 0x04 and 0x02 are left of the flags here (0x08 is static's). 0x02
; is kept for the snapshot's length; 0x04 leaves 6 - 4 = 2.
LOAD (snap_short, $flags)
AND ($snap_short, flag_short_snapshot)
SUBTRACT ($flags, $snap_short)
SUBTRACT ($snap_mal, $flags)
; @@ENDIF
:tokens

; @@TOKENS@@

:end_of_message
; @@IF basic static
END-MESSAGE ($fb_loc, returned_parameters_location, 0, 0, 0, 0, 0)
; @@ENDIF
; @@IF dynamic shared
END-MESSAGE ($fb_loc, returned_parameters_location, $snapshot_length, 64, decompress, $snap_mal, snapshot_priority)
; @@ENDIF
; @@IF dynamic_short shared_short
LOAD (snap_len, $snapshot_length)
COMPARE ($snap_short, 0, save_snapshot, save_snapshot, short_snapshot)
:short_snapshot
LOAD (snap_len, $decompressed_pointer)
SUBTRACT ($snap_len, 64)
:save_snapshot
END-MESSAGE ($fb_loc, returned_parameters_location, $snap_len, 64, decompress, $snap_mal, snapshot_priority)
; @@ENDIF
:fail
DECOMPRESSION-FAILURE

readonly (0)

:params
:buffer_end                     word (0)
:buffer_size                    word (0)
:dict_begin                     word (0)
:dict_length                    word (0)
; @@IF basic static dynamic shared
:dict_end                       word (0)
; @@ENDIF
; @@IF dynamic_short shared_short
:dict_at                        word (0)
; @@ENDIF
:code_length                    word (0)
:announce_params                word (0)
:snapshot_length                word (0)
:dictionary_id
byte (0xfb, 0xe5, 0x07, 0xdf, 0xe5, 0xe6)
:circular_buffer
