use sigcomp::{CompartmentId, Params};
use sigcomp_compress::{Config, Endpoint, Received};
use std::time::Instant;
fn main() {
    let dir = std::env::args().nth(1).unwrap();
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "sip")).collect();
    files.sort();
    let msgs: Vec<(bool, Vec<u8>)> = files.iter().take(2).map(|p| (p.file_name().unwrap().to_str().unwrap().contains("-ue-"), std::fs::read(p).unwrap())).collect();
    let p = Params { dms: 8192, sms: 8192, cpb: 64, version: 2 };
    let mut ue = Endpoint::new(p, p, Config::default()).unwrap();
    let mut pc = Endpoint::new(p, p, Config::default()).unwrap();
    let mut tc = [0f64; 10]; let _ = 0;
    let mut td = [0f64; 10];
    let n: u64 = std::env::var("N").ok().and_then(|v| v.parse().ok()).unwrap_or(2000);
    let per: usize = std::env::var("PER").ok().and_then(|v| v.parse().ok()).unwrap_or(10);
    for k in 0..n {
        let c = CompartmentId(k);
        for j in 0..per {
            let i = if j < 10 { j } else { 8 + j % 2 };
            let (from_ue, m) = &msgs[i % msgs.len()];
            let (a, b) = if *from_ue { (&mut ue, &mut pc) } else { (&mut pc, &mut ue) };
            let t = Instant::now();
            let out = a.compress(c, m).unwrap();
            let t1 = Instant::now();
            assert!(matches!(b.receive(c, &out.message), Ok(Received::Message { .. })));
            let t2 = Instant::now();
            tc[i.min(9)] += (t1 - t).as_secs_f64();
            td[i.min(9)] += (t2 - t1).as_secs_f64();
        }
        ue.close_compartment(c);
        pc.close_compartment(c);
    }
    for i in 0..10 {
        println!("{i}: compress {:.1} us, receive {:.1} us", tc[i] * 1e6 / n as f64, td[i] * 1e6 / n as f64);
    }
}
