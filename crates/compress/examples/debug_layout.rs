use sigcomp::{Params, Transport};
use sigcomp_compress::{Algorithm, Compressor, Config, Mechanism};
fn main() {
    for &a in Algorithm::ALL {
        for dms in [2048u32, 4096, 8192, 16384] {
            for t in [Transport::Message, Transport::Stream] {
                for m in Mechanism::ALL {
                    let p = Params { dms, sms: dms, cpb: 16, version: 2 };
                    let c = Compressor::new(Config { algorithm: a, mechanism: m, transport: t, ..Config::default() }, p, p);
                    match c {
                        Ok(c) => println!("{} {dms} {t:?} {}: {:?} code {} dict {}", a.name(), m.name(), c.layout(), c.bytecode().code.len(), c.bytecode().dictionary.len()),
                        Err(e) => println!("{} {dms} {t:?} {}: {e}", a.name(), m.name()),
                    }
                }
            }
        }
    }
}
