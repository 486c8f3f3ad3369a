; sigkit fallback decompressor: outputs the compressed data unchanged. Used
; over a message transport when even the smallest compressing bytecode and
; the compressed message would not leave the peer's UDVM enough memory
; (RFC 3320 §7: UDVM memory = DMS − message size), so every message can be
; delivered at any DMS.
at (64)
:byte                           pad (1)

at (128)
:init
INPUT-BYTES (1, byte, end)
OUTPUT (byte, 1)
JUMP (init)
:end
END-MESSAGE (0, 0, 0, 0, 0, 0, 0)
:circular_buffer
