//! pulsarsim's scenario driver for the Rust `pulsar` crate.
//!
//! It reads one scenario as JSON (from the file named by its first argument,
//! or from stdin), subscribes, produces the scenario's messages itself
//! (unbatched, each with a property "i"), answers every delivery as the
//! scenario's script says, and prints one JSON line per thing it saw or did.
//! The format is described in scenarios/clients/README.md.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{Read, Write};
use std::time::{Duration, Instant};

use futures::StreamExt;
use pulsar::consumer::{ConsumerOptions, DeadLetterPolicy, InitialPosition};
use pulsar::message::proto::command_subscribe::SubType;
use pulsar::message::proto::MessageIdData;
use pulsar::{Authentication, Consumer, Pulsar, TokioExecutor};
use serde::Deserialize;
use serde_json::{json, Value};

/// The crate version this driver is built against (Cargo.lock pins it).
const CLIENT_VERSION: &str = "6.9.1";

#[derive(Deserialize)]
struct DeadLetter {
    max_redeliver_count: usize,
    topic: String,
}

#[derive(Deserialize, Default)]
struct Stop {
    #[serde(default)]
    acked: usize,
    #[serde(default)]
    deliveries: usize,
    #[serde(default)]
    stdin_eof: bool,
}

#[derive(Deserialize)]
struct Scenario {
    service_url: String,
    topic: String,
    subscription: String,
    #[serde(default = "default_sub_type")]
    subscription_type: String,
    #[serde(default)]
    ack_timeout_ms: u64,
    #[serde(default)]
    dead_letter: Option<DeadLetter>,
    #[serde(default)]
    messages: usize,
    #[serde(default)]
    script: Option<HashMap<String, Vec<String>>>,
    #[serde(default = "default_outcome")]
    default: String,
    #[serde(default)]
    stop: Stop,
    #[serde(default = "default_deadline")]
    deadline_ms: u64,
    /// PEM file of the CA that signed the broker's certificate (pulsar+ssl).
    #[serde(default)]
    tls_trust_certs_file: Option<String>,
    #[serde(default)]
    tls_validate_hostname: bool,
    /// A JSON Web Token, sent with the "token" authentication method.
    #[serde(default)]
    auth_token: Option<String>,
}

fn default_sub_type() -> String {
    "Shared".into()
}
fn default_outcome() -> String {
    "ack".into()
}
fn default_deadline() -> u64 {
    60_000
}

struct Out {
    start: Instant,
}

impl Out {
    fn emit(&self, mut v: Value) {
        v["t_ms"] = json!(self.start.elapsed().as_secs_f64() * 1000.0);
        let mut so = std::io::stdout().lock();
        let _ = writeln!(so, "{}", v);
        let _ = so.flush();
    }
}

fn format_id(id: &MessageIdData) -> String {
    format!(
        "{}:{}:{}:{}",
        id.ledger_id,
        id.entry_id,
        id.partition.unwrap_or(-1),
        id.batch_index.unwrap_or(-1)
    )
}

fn sub_type(name: &str) -> Result<SubType, String> {
    match name {
        "Exclusive" => Ok(SubType::Exclusive),
        "Shared" => Ok(SubType::Shared),
        "Failover" => Ok(SubType::Failover),
        "Key_Shared" | "KeyShared" => Ok(SubType::KeyShared),
        other => Err(format!("unknown subscription type {other:?}")),
    }
}

fn outcome(sc: &Scenario, index: &str, attempt: usize) -> String {
    let list = sc
        .script
        .as_ref()
        .and_then(|s| s.get(index).or_else(|| s.get("*")));
    list.and_then(|l| l.get(attempt))
        .cloned()
        .unwrap_or_else(|| sc.default.clone())
}

fn read_scenario() -> Result<Scenario, String> {
    let mut text = String::new();
    match std::env::args().nth(1) {
        Some(path) if path != "-" => {
            text = std::fs::read_to_string(&path).map_err(|e| format!("read {path}: {e}"))?;
        }
        _ => {
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| format!("read stdin: {e}"))?;
        }
    }
    serde_json::from_str(&text).map_err(|e| format!("parse scenario: {e}"))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let out = Out {
        start: Instant::now(),
    };
    let code = match run(&out).await {
        Ok(()) => 0,
        Err(e) => {
            out.emit(json!({"event": "error", "message": e}));
            1
        }
    };
    // A pending stdin read would keep the runtime from shutting down, so the
    // process ends here.
    std::process::exit(code);
}

async fn run(out: &Out) -> Result<(), String> {
    let sc = read_scenario()?;
    out.emit(json!({"event": "start", "client": "rust", "library": "pulsar", "version": CLIENT_VERSION}));
    let deadline = tokio::time::Instant::now() + Duration::from_millis(sc.deadline_ms);

    // stdin's end, when the scenario asks for it, is read by a plain thread.
    let (eof_tx, mut eof_rx) = tokio::sync::mpsc::channel::<()>(1);
    if sc.stop.stdin_eof {
        std::thread::spawn(move || {
            let mut buf = [0u8; 256];
            let mut stdin = std::io::stdin();
            while let Ok(n) = stdin.read(&mut buf) {
                if n == 0 {
                    break;
                }
            }
            let _ = eof_tx.blocking_send(());
        });
    } else {
        std::mem::forget(eof_tx);
    }

    let mut client = Pulsar::builder(sc.service_url.clone(), TokioExecutor);
    if let Some(ca) = &sc.tls_trust_certs_file {
        client = client
            .with_certificate_chain_file(ca)
            .map_err(|e| format!("CA file {ca}: {e}"))?
            .with_allow_insecure_connection(false)
            .with_tls_hostname_verification_enabled(sc.tls_validate_hostname);
    }
    if let Some(token) = &sc.auth_token {
        client = client.with_auth(Authentication { name: "token".to_string(), data: token.clone().into_bytes() });
    }
    let pulsar: Pulsar<_> = client.build().await.map_err(|e| format!("client: {e}"))?;

    let mut builder = pulsar
        .consumer()
        .with_topic(sc.topic.clone())
        .with_subscription(sc.subscription.clone())
        .with_subscription_type(sub_type(&sc.subscription_type)?)
        .with_consumer_name("rust-driver")
        .with_options(ConsumerOptions::default().with_initial_position(InitialPosition::Earliest));
    if sc.ack_timeout_ms > 0 {
        builder = builder.with_unacked_message_resend_delay(Some(Duration::from_millis(sc.ack_timeout_ms)));
    }
    if let Some(dl) = &sc.dead_letter {
        builder = builder.with_dead_letter_policy(DeadLetterPolicy {
            max_redeliver_count: dl.max_redeliver_count,
            dead_letter_topic: dl.topic.clone(),
        });
    }
    let mut consumer: Consumer<Vec<u8>, _> = builder
        .build()
        .await
        .map_err(|e| format!("subscribe: {e}"))?;
    out.emit(json!({"event": "subscribed"}));

    let mut producer = pulsar
        .producer()
        .with_topic(sc.topic.clone())
        .with_name("rust-driver-producer")
        .build()
        .await
        .map_err(|e| format!("producer: {e}"))?;
    for i in 0..sc.messages {
        let receipt = producer
            .create_message()
            .with_content(format!("m{i}").into_bytes())
            .with_property("i", i.to_string())
            .with_key(format!("k{i}"))
            .send_non_blocking()
            .await
            .map_err(|e| format!("send {i}: {e}"))?
            .await
            .map_err(|e| format!("receipt {i}: {e}"))?;
        let id = receipt
            .message_id
            .as_ref()
            .map(format_id)
            .unwrap_or_default();
        out.emit(json!({"event": "produced", "i": i, "id": id}));
    }

    let mut attempts: HashMap<String, usize> = HashMap::new();
    let mut acked: HashSet<String> = HashSet::new();
    let mut deliveries = 0usize;
    let reason;
    loop {
        if sc.stop.acked > 0 && acked.len() >= sc.stop.acked {
            reason = "acked";
            break;
        }
        if sc.stop.deliveries > 0 && deliveries >= sc.stop.deliveries {
            reason = "deliveries";
            break;
        }
        let msg = tokio::select! {
            m = consumer.next() => m,
            _ = eof_rx.recv() => { reason = "stdin"; break; }
            _ = tokio::time::sleep_until(deadline) => { reason = "deadline"; break; }
        };
        let msg = match msg {
            Some(Ok(m)) => m,
            Some(Err(e)) => return Err(format!("receive: {e}")),
            None => return Err("consumer stream ended".into()),
        };
        deliveries += 1;
        let props: BTreeMap<String, String> = msg
            .metadata()
            .properties
            .iter()
            .map(|kv| (kv.key.clone(), kv.value.clone()))
            .collect();
        let index = props.get("i").cloned().unwrap_or_default();
        let attempt = *attempts.get(&index).unwrap_or(&0);
        attempts.insert(index.clone(), attempt + 1);
        let action = outcome(&sc, &index, attempt);
        // The crate hands the application no redelivery count: the field
        // stays null and the broker's trace tells the count.
        out.emit(json!({
            "event": "received",
            "i": index.parse::<i64>().unwrap_or(-1),
            "attempt": attempt,
            "id": format_id(msg.message_id()),
            "payload": String::from_utf8_lossy(&msg.payload.data),
            "redelivery_count": Value::Null,
            "properties": props,
            "action": action,
        }));
        match action.as_str() {
            "ack" => {
                consumer.ack(&msg).await.map_err(|e| format!("ack: {e}"))?;
                acked.insert(index);
            }
            "nack" => consumer.nack(&msg).await.map_err(|e| format!("nack: {e}"))?,
            "none" => {}
            other => return Err(format!("unknown outcome {other:?}")),
        }
    }
    let _ = consumer.close().await;
    let _ = producer.close().await;
    out.emit(json!({"event": "done", "reason": reason, "deliveries": deliveries, "acked": acked.len()}));
    Ok(())
}
