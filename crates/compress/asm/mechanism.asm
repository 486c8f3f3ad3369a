; sigkit mechanism program: the part of every sigkit decompressor that
; carries out the SigComp mechanisms (RFC 3320 §5, RFC 3321 as seed 000
; §3.4–3.5 and §7.11 describe them, with RFC 4896's corrections). The token
; decoder of one algorithm (asm/lzss.asm, asm/deflate.asm, asm/lz77.asm) is
; spliced in by build.rs at the three placeholders (see
; /work/notes/fragment-contract.md).
;
; The circular buffer (RFC 3320 §8.4) holds a part of the RFC 3485 SIP/SDP
; dictionary (or a user dictionary state), earlier messages and shared
; states. Every SigComp message that runs this bytecode starts its
; compressed data with one flags byte:
;   0x80  a shared state follows: 6-byte partial identifier, 2-byte length;
;         it is appended to the circular buffer (RFC 3321 shared mode)
;   0x40  a 1-byte feedback item follows, requested back as feedback
;         (RFC 3320 §9.4.9): its return tells the compressor that this
;         message was decompressed and its states created
;   0x08  dynamic: the UDVM memory from address 64 to buffer_end is saved
;         as state (the snapshot); a later message names it in its header
;         and continues from there
;   0x20  the sender saved this message as a shared state: its identifier
;         (SHA-1 over length, address 0, instruction 0, minimum access
;         length 6 and the message) is announced in the returned parameters
;   0x10  save the bytecode as state (static mechanism)
; then the algorithm's tokens up to the end of the message.
;
; The words between :params and :circular_buffer are set by the compressor.

readonly (0)
at (32)
:index                          pad (2)
:length_value                   pad (2)
:old_pointer                    pad (2)
:flags                          pad (1)
:flags_lsb                      pad (1)
:shared_id                      pad (6)
:shared_len                     pad (2)
:msg_start                      pad (2)
:msg_len                        pad (2)
:state_header                   pad (8)

at (64)
:byte_copy_left                 pad (2)
:byte_copy_right                pad (2)
:input_bit_order                pad (2)
:decompressed_pointer           pad (2)
:fb_loc                         pad (2)
:rp_loc                         pad (2)
:snap_mal                       pad (2)
:requested_feedback_location    pad (1)
:requested_feedback_item        pad (1)
:returned_parameters_location   pad (1)
:returned_sigcomp_version       pad (1)
:announced_length               pad (1)
:announced_id                   pad (6)
:announced_end                  pad (1)
; @@VARS@@

align (64)
readonly (1)

:init
MULTILOAD (64, 4, circular_buffer, $buffer_end, 0, circular_buffer)
COMPARE ($dict_length, 0, load_dict, init_algorithm, load_dict)
:load_dict
STATE-ACCESS (dictionary_id, 6, $dict_begin, $dict_length, circular_buffer, 0)
ADD ($decompressed_pointer, $dict_length)
:init_algorithm
; @@INIT@@

:decompress
MULTILOAD (fb_loc, 3, 0, 0, 0)
INPUT-BYTES (1, flags_lsb, fail)

LOAD (index, $flags)
AND ($index, 128)
COMPARE ($index, 0, after_shared, after_shared, load_shared)
:load_shared
INPUT-BYTES (8, shared_id, fail)
STATE-ACCESS (shared_id, 6, 0, $shared_len, $decompressed_pointer, 0)
ADD ($decompressed_pointer, $shared_len)
COMPARE ($decompressed_pointer, $buffer_end, after_shared, wrap_shared, wrap_shared)
:wrap_shared
SUBTRACT ($decompressed_pointer, $buffer_size)
:after_shared

LOAD (index, $flags)
AND ($index, 64)
COMPARE ($index, 0, after_feedback, after_feedback, feedback)
:feedback
LOAD (fb_loc, requested_feedback_location)
LOAD (requested_feedback_location, 1024)
INPUT-BYTES (1, requested_feedback_item, fail)
:after_feedback

LOAD (index, $flags)
AND ($index, 8)
COMPARE ($index, 0, after_snapshot, after_snapshot, snapshot)
:snapshot
LOAD (snap_mal, 6)
:after_snapshot

LOAD (index, $flags)
AND ($index, 32)
COMPARE ($index, 0, tokens, tokens, reserve_header)
:reserve_header
LOAD (msg_start, $decompressed_pointer)
COPY-LITERAL (state_header, 8, $decompressed_pointer)
:tokens

; @@TOKENS@@

:end_of_message
; Every message returns our parameters (RFC 3320 §9.4.9), so the peer's
; compressor learns our DMS, SMS and cycles per bit; the list of state
; identifiers is empty unless this message is announced below.
MULTILOAD (returned_parameters_location, 2, $announce_params, 0)
LOAD (rp_loc, returned_parameters_location)
LOAD (index, $flags)
AND ($index, 32)
COMPARE ($index, 0, after_announce, after_announce, announce)
:announce
LOAD (msg_len, $decompressed_pointer)
SUBTRACT ($msg_len, $msg_start)
COMPARE ($decompressed_pointer, $msg_start, unwrap, hash, hash)
:unwrap
ADD ($msg_len, $buffer_size)
:hash
SUBTRACT ($msg_len, 8)
MULTILOAD (state_header, 4, $msg_len, 0, 0, 6)
COPY (state_header, 8, $msg_start)
ADD ($msg_len, 8)
LOAD (announced_length, 1536)
SHA-1 ($msg_start, $msg_len, announced_id)
MEMSET (announced_end, 1, 0, 0)
:after_announce

LOAD (index, $flags)
AND ($index, 16)
COMPARE ($index, 0, end, end, save_bytecode)
:save_bytecode
STATE-CREATE ($code_length, init, init, 6, 2)
:end
END-MESSAGE ($fb_loc, $rp_loc, $snapshot_length, 64, decompress, $snap_mal, 1)
:fail
DECOMPRESSION-FAILURE

readonly (0)

:params
:buffer_end                     word (0)
:buffer_size                    word (0)
:dict_begin                     word (0)
:dict_length                    word (0)
:code_length                    word (0)
:announce_params                word (0)
:snapshot_length                word (0)
:dictionary_id
byte (0xfb, 0xe5, 0x07, 0xdf, 0xe5, 0xe6)
:circular_buffer
