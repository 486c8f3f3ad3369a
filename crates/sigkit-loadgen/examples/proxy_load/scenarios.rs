//! The live-generator runs: through the proxy to the responder and to
//! Kamailio, and the same terminals in plain SIP straight to each (the
//! reference for the added latency).

use std::net::SocketAddr;
use std::path::Path;

use crate::load::{find_max, Load};
use crate::processes::{http_get, metric, start_kamailio, start_proxy};
use crate::responder::start_responder;
use crate::step::{StepResult, HEADER};
use crate::terminal::{make_terminals, register_all};
use crate::watch::{Upstream, Watch};
use crate::Args;

/// The final table's rows, one per figure.
pub struct Summary {
    pub lines: Vec<String>,
}

fn latency_line(what: &str, p: &StepResult, d: &StepResult) -> String {
    let (Some((pp50, pp99, _)), Some((dp50, dp99, _))) = (p.probe, d.probe) else { return String::new() };
    format!(
        "| added latency {what} ({} req/s offered): p50 / p99 | {:.0} / {:.0} µs (probe through the proxy {:.0} / {:.0}, straight {:.0} / {:.0}) | p99 ≤ 1 ms at 50 % |",
        p.offered,
        pp50 - dp50,
        pp99 - dp99,
        pp50,
        pp99,
        dp50,
        dp99
    )
}

/// The proxy's compression ratios, state decisions and UDVM cycles, from
/// its metrics.
fn print_proxy_metrics(metrics: SocketAddr) {
    let m = http_get(metrics, "/metrics");
    let ratio_in = metric(&m, "sigkit_proxy_compression_ratio_in");
    let ratio_out = metric(&m, "sigkit_proxy_compression_ratio_out");
    let accepted = metric(&m, "sigkit_proxy_state_decisions_total{decision=\"accepted\"}");
    let declined = metric(&m, "sigkit_proxy_state_decisions_total{decision=\"declined\"}");
    let cycles = metric(&m, "sigkit_proxy_udvm_cycles_total");
    let msgs = metric(&m, "sigkit_proxy_messages_received_total{side=\"terminal\"}");
    println!(
        "proxy metrics: SigComp/SIP bytes in {ratio_in:.3}, out {ratio_out:.3}; states accepted {accepted}, declined {declined}; {:.0} UDVM cycles per message in",
        cycles / msgs.max(1.0)
    );
}

/// Pure proxy: the responder as upstream; then the same rate from 48
/// terminals, and plain SIP straight to the responder.
pub async fn proxy_scenarios(args: &Args, dir: &Path, summary: &mut Summary) -> Result<(), String> {
    let responder = start_responder();
    let proxy = start_proxy(args, dir, "proxy-responder", responder, 4096)?;
    let watch = Watch { proxy: vec![proxy.pid()], upstream: Upstream::Responder, metrics: Some(proxy.metrics) };
    let terms = make_terminals(args.terminals, proxy.listen, true).await?;
    let registered = register_all(&terms, "127.0.0.1").await;
    println!("\n{registered} of {} SigComp terminals registered through the proxy (responder upstream)", terms.len());
    let mut load = Load::new(terms, "sip:bob@127.0.0.1".into());
    println!("{HEADER}");
    let max = find_max(&load, &args.rates, args.step(), &watch, "proxy → responder").await;
    load.probe = Some((proxy.listen, true));
    let half = load.step(max / 2, args.step(), &watch).await;
    println!("{}", half.row("proxy → responder @50 %"));
    let ninety = load.step(max * 9 / 10, args.step(), &watch).await;
    println!("{}", ninety.row("proxy → responder @90 %"));
    load.probe = None;
    print_proxy_metrics(proxy.metrics);
    load.stop();

    // The same rate from 48 terminals: every compartment stays among the
    // endpoint's 64 hot ones (no packing and unpacking of states).
    let few = make_terminals(48, proxy.listen, true).await?;
    register_all(&few, "127.0.0.1").await;
    let load = Load::new(few, "sip:bob@127.0.0.1".into());
    let hot = load.step(max * 9 / 10, args.step(), &watch).await;
    println!("{}", hot.row("proxy → responder @90 %, 48 terminals"));
    load.stop();
    drop(proxy);

    // Reference: plain SIP straight to the responder.
    let plain = make_terminals(args.terminals, responder, false).await?;
    let mut load = Load::new(plain, "sip:bob@127.0.0.1".into());
    load.probe = Some((responder, false));
    let watch_plain = Watch { proxy: Vec::new(), upstream: Upstream::Responder, metrics: None };
    let direct_half = load.step(max / 2, args.step(), &watch_plain).await;
    println!("{}", direct_half.row("plain → responder @50 %"));
    let direct_ninety = load.step(max * 9 / 10, args.step(), &watch_plain).await;
    println!("{}", direct_ninety.row("plain → responder @90 %"));
    load.stop();

    summary.lines.push(format!(
        "| proxy throughput, {} terminals, responder upstream (<1 % loss) | {} SigComp msgs/s ({} req/s); at 90 %: CPU proxy {:.0} % ({:.0} µs per request and response) / generator {:.0} % / responder {:.0} %, proxy RSS {:.0} MiB | ≥ 50,000 msgs/s |",
        args.terminals,
        2 * max,
        max,
        ninety.cpu[0],
        ninety.proxy_us_per_request(),
        ninety.cpu[1],
        ninety.cpu[2],
        ninety.rss_mib
    ));
    summary.lines.push(format!(
        "| the same rate ({} req/s) from 48 terminals (all compartments hot) | proxy CPU {:.0} % ({:.0} µs per request and response), loss {:.2} % | — |",
        hot.offered,
        hot.cpu[0],
        hot.proxy_us_per_request(),
        hot.loss() * 100.0
    ));
    summary.lines.push(latency_line("at 50 %", &half, &direct_half));
    summary.lines.push(latency_line("at 90 %", &ninety, &direct_ninety));
    Ok(())
}

/// Kamailio as the upstream (digest REGISTER, then OPTIONS it answers
/// 404), and the same terminals in plain SIP straight to it.
pub async fn kamailio_scenarios(args: &Args, dir: &Path, summary: &mut Summary) -> Result<(), String> {
    let (kamailio, kpids) = start_kamailio(dir)?;
    let kaddr = kamailio.addr;
    let ruri = format!("sip:nobody@127.0.0.1:{}", kaddr.port());
    let proxy = start_proxy(args, dir, "proxy-kamailio", kaddr, 4096)?;
    let watch =
        Watch { proxy: vec![proxy.pid()], upstream: Upstream::Kamailio(kpids.clone()), metrics: Some(proxy.metrics) };
    let terms = make_terminals(args.terminals, proxy.listen, true).await?;
    let registered = register_all(&terms, "127.0.0.1").await;
    println!("\n{registered} of {} SigComp terminals registered with Kamailio through the proxy", terms.len());
    let mut load = Load::new(terms, ruri.clone());
    println!("{HEADER}");
    let max = find_max(&load, &args.rates, args.step(), &watch, "proxy → Kamailio").await;
    load.probe = Some((proxy.listen, true));
    let half = load.step(max / 2, args.step(), &watch).await;
    println!("{}", half.row("proxy → Kamailio @50 %"));
    load.stop();
    drop(proxy);

    let plain = make_terminals(args.terminals, kaddr, false).await?;
    let mut load = Load::new(plain, ruri);
    let watch_plain = Watch { proxy: Vec::new(), upstream: Upstream::Kamailio(kpids), metrics: None };
    let kmax = find_max(&load, &args.rates, args.step(), &watch_plain, "plain → Kamailio").await;
    load.probe = Some((kaddr, false));
    let direct_half = load.step(max / 2, args.step(), &watch_plain).await;
    println!("{}", direct_half.row("plain → Kamailio @50 % of the proxy's"));
    load.stop();
    drop(kamailio);
    summary.lines.push(format!(
        "| proxy throughput, Kamailio upstream (<1 % loss) | {} SigComp msgs/s ({} req/s); at 50 %: CPU proxy {:.0} % / generator {:.0} % / Kamailio {:.0} % | ≥ 50,000 msgs/s |",
        2 * max, max, half.cpu[0], half.cpu[1], half.cpu[2]
    ));
    summary.lines.push(latency_line("with Kamailio at 50 %", &half, &direct_half));
    summary.lines.push(format!(
        "| reference: plain SIP straight to Kamailio (<1 % loss) | {} SIP msgs/s ({} req/s); at {} req/s CPU generator {:.0} % / Kamailio {:.0} % | — |",
        2 * kmax, kmax, direct_half.offered, direct_half.cpu[1], direct_half.cpu[2]
    ));
    Ok(())
}
