//! `Assembly::upload` and `Upload::message`: what the standard SigComp
//! header (RFC 3320 §7.3) can carry, as typed errors.

use sigcomp::wire::{self, EmitError};
use sigcomp::{Decompressor, Params, Reason, Transport};
use sigcomp_asm::{assemble, Upload, UploadError};

fn upload(src: &str) -> Result<Upload, UploadError> {
    assemble(src).expect("assembles").upload()
}

#[test]
fn what_the_header_cannot_carry_is_a_typed_error() {
    let end = "END-MESSAGE (0, 0, 0, 0, 0, 0, 0)\n";
    assert_eq!(upload("at (128)\nbyte (1)\n"), Err(UploadError::NoInstruction));
    assert_eq!(
        upload(&format!("at (100)\n{end}")),
        Err(UploadError::Header(EmitError::BadDestination { destination: 100 }))
    );
    assert_eq!(
        upload(&format!("at (1088)\n{end}")),
        Err(UploadError::Header(EmitError::BadDestination { destination: 1088 }))
    );
    assert_eq!(
        upload(&format!("at (20)\nbyte (0)\nat (128)\n{end}")),
        Err(UploadError::UsefulValuesWritten { address: 20 })
    );
    assert_eq!(
        upload(&format!("at (64)\nbyte (5)\nat (128)\n{end}")),
        Err(UploadError::NonZeroBelowEntry { address: 64, value: 5, entry: 128 })
    );
    // JUMP (2 bytes), 4094 bytes of padding, one non-zero byte: 4097.
    assert_eq!(
        upload("at (128)\nJUMP (128)\npad (4094)\nbyte (1)\n"),
        Err(UploadError::Header(EmitError::CodeTooLong { len: 4097 }))
    );
    assert_eq!(upload("at (128)\nJUMP (128)\npad (4092)\nbyte (1)\n").unwrap().code.len(), 4095);
    let e = upload(&format!("at (100)\n{end}")).unwrap_err();
    assert!(e.to_string().contains("multiple of 64"), "{e}");
    let e = upload("at (128)\nJUMP (128)\npad (4094)\nbyte (1)\n").unwrap_err();
    assert!(e.to_string().contains("4097"), "{e}");
}

#[test]
fn the_message_is_the_one_header_writers() {
    let u = upload("at (192)\nOUTPUT (text, 2)\nEND-MESSAGE (0, 0, 0, 0, 0, 0, 0)\n:text byte (0x68, 0x69)\n").unwrap();
    assert_eq!(u.destination, 192);
    let m = u.message(b"data").unwrap();
    assert_eq!(m, wire::emit_bytecode_message(None, &u.code, 192, b"data").unwrap());
    assert_eq!(&m[..3], [0xF8, (u.code.len() >> 4) as u8, ((u.code.len() as u8 & 0x0F) << 4) | 2]);
    // An Upload not made by `upload` is checked by the same writer.
    let bad = Upload { destination: 100, code: vec![0x00] };
    assert_eq!(bad.message(&[]), Err(EmitError::BadDestination { destination: 100 }));
    let empty = Upload { destination: 128, code: Vec::new() };
    assert_eq!(empty.message(&[]), Err(EmitError::EmptyCode));
}

#[test]
fn all_zero_bytecode_keeps_one_byte() {
    // DECOMPRESSION-FAILURE is the opcode 0x00: trimming every trailing
    // zero would leave code_len 0, which marks a NACK (RFC 4077 §3.1).
    let u = upload("at (128)\nDECOMPRESSION-FAILURE\n").unwrap();
    assert_eq!(u.code, [0x00]);
    let mut d = Decompressor::new(Params::default()).unwrap();
    let failure = d.decompress(&u.message(&[]).unwrap(), Transport::Message).unwrap_err();
    assert_eq!(failure.reason, Reason::UserRequested);
}
