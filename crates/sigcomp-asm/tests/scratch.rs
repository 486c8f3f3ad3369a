mod common;
use common::*;
#[test]
fn scratch() {
    for (sub, ext) in [("rfc4465", "asm"), ("rfc4464", "asm")] {
        for s in stems(sub, ext) {
            let src = read(sub, &format!("{s}.asm"));
            let Ok(exp) = std::panic::catch_unwind(|| hex_file(sub, &format!("{s}.hex"))) else { continue };
            match sigcomp_asm::assemble(&src) {
                Err(e) => println!("{s}: ERROR {e}"),
                Ok(a) => match a.upload() {
                    Err(e) => println!("{s}: UPLOAD {e}"),
                    Ok(u) => {
                        if u.code == exp { println!("{s}: OK") } else {
                            let d = first_diff(&u.code, &exp).unwrap();
                            println!("{s}: DIFF at {} (addr {}) len {} vs {}\n  got {}\n  exp {}", d, d + u.destination as usize, u.code.len(), exp.len(),
                              hex(&u.code[d.saturating_sub(4)..(d+12).min(u.code.len())]), hex(&exp[d.saturating_sub(4)..(d+12).min(exp.len())]));
                        }
                    }
                },
            }
        }
    }
}
