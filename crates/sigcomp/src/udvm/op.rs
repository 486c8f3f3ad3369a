//! Opcodes (RFC 3320 Figure 11); each instruction's section of RFC 3320
//! is named in its doc.

/// DECOMPRESSION-FAILURE: fails the message with USER_REQUESTED (§9.4.1).
pub const DECOMPRESSION_FAILURE: u8 = 0;
/// AND ($operand_1, %operand_2): bitwise and into operand_1 (§9.1.1).
pub const AND: u8 = 1;
/// OR ($operand_1, %operand_2): bitwise or into operand_1 (§9.1.1).
pub const OR: u8 = 2;
/// NOT ($operand_1): bitwise complement in place (§9.1.1).
pub const NOT: u8 = 3;
/// LSHIFT ($operand_1, %operand_2): shift left, modulo 2^16 (§9.1.1).
pub const LSHIFT: u8 = 4;
/// RSHIFT ($operand_1, %operand_2): shift right (§9.1.1).
pub const RSHIFT: u8 = 5;
/// ADD ($operand_1, %operand_2): sum modulo 2^16 (§9.1.2).
pub const ADD: u8 = 6;
/// SUBTRACT ($operand_1, %operand_2): difference modulo 2^16 (§9.1.2).
pub const SUBTRACT: u8 = 7;
/// MULTIPLY ($operand_1, %operand_2): product modulo 2^16 (§9.1.2).
pub const MULTIPLY: u8 = 8;
/// DIVIDE ($operand_1, %operand_2): integer quotient; DIV_BY_ZERO for 0 (§9.1.2).
pub const DIVIDE: u8 = 9;
/// REMAINDER ($operand_1, %operand_2): remainder; DIV_BY_ZERO for 0 (§9.1.2).
pub const REMAINDER: u8 = 10;
/// SORT-ASCENDING (%start, %n, %k): sorts k lists of n words by the first (§9.1.3).
pub const SORT_ASCENDING: u8 = 11;
/// SORT-DESCENDING (%start, %n, %k): as SORT-ASCENDING, descending (§9.1.3).
pub const SORT_DESCENDING: u8 = 12;
/// SHA-1 (%position, %length, %destination): the 20-byte hash of a byte string (§9.1.4).
pub const SHA_1: u8 = 13;
/// LOAD (%address, %value): writes one word (§9.2.1).
pub const LOAD: u8 = 14;
/// MULTILOAD (%address, #n, %value_0, ..., %value_n-1): writes n words (§9.2.2).
pub const MULTILOAD: u8 = 15;
/// PUSH (%value): onto the UDVM stack (§9.2.3).
pub const PUSH: u8 = 16;
/// POP (%address): off the UDVM stack; STACK_UNDERFLOW when empty (§9.2.3).
pub const POP: u8 = 17;
/// COPY (%position, %length, %destination): within the circular buffer (§9.2.4).
pub const COPY: u8 = 18;
/// COPY-LITERAL (%position, %length, $destination): COPY that advances destination (§9.2.5).
pub const COPY_LITERAL: u8 = 19;
/// COPY-OFFSET (%offset, %length, $destination): copies from offset bytes back (§9.2.6).
pub const COPY_OFFSET: u8 = 20;
/// MEMSET (%address, %length, %start_value, %offset): an arithmetic byte sequence (§9.2.7).
pub const MEMSET: u8 = 21;
/// JUMP (@address) (§9.3.1).
pub const JUMP: u8 = 22;
/// COMPARE (%value_1, %value_2, @address_1, @address_2, @address_3): branch on <, =, > (§9.3.2).
pub const COMPARE: u8 = 23;
/// CALL (@address): pushes the next instruction's address and jumps (§9.3.3).
pub const CALL: u8 = 24;
/// RETURN: pops the address to continue at (§9.3.3).
pub const RETURN: u8 = 25;
/// SWITCH (#n, %j, @address_0, ..., @address_n-1): jumps to address_j (§9.3.4).
pub const SWITCH: u8 = 26;
/// CRC (%value, %position, %length, @address): jumps unless the 16-bit FCS of RFC 1662 matches (§9.3.5).
pub const CRC: u8 = 27;
/// INPUT-BYTES (%length, %destination, @address): reads whole bytes of compressed data (§9.4.2).
pub const INPUT_BYTES: u8 = 28;
/// INPUT-BITS (%length, %destination, @address): reads up to 16 bits (§9.4.3).
pub const INPUT_BITS: u8 = 29;
/// INPUT-HUFFMAN (%destination, @address, #n, ...): decodes a canonical Huffman code (§9.4.4).
pub const INPUT_HUFFMAN: u8 = 30;
/// STATE-ACCESS: copies part of a stored state item into memory and may jump to its instruction (§9.4.5).
pub const STATE_ACCESS: u8 = 31;
/// STATE-CREATE: requests a state item, created only if the message is accepted (§9.4.6).
pub const STATE_CREATE: u8 = 32;
/// STATE-FREE (%partial_identifier_start, %partial_identifier_length): requests a state item's removal (§9.4.7).
pub const STATE_FREE: u8 = 33;
/// OUTPUT (%output_start, %output_length): appends to the decompressed message (§9.4.8).
pub const OUTPUT: u8 = 34;
/// END-MESSAGE: ends the message with feedback and up to one more state request (§9.4.9).
pub const END_MESSAGE: u8 = 35;
