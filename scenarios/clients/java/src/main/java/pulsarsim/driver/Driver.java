package pulsarsim.driver;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.List;
import java.util.TreeMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.pulsar.client.api.AuthenticationFactory;
import org.apache.pulsar.client.api.ClientBuilder;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.ConsumerBuilder;
import org.apache.pulsar.client.api.DeadLetterPolicy;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.MessageIdAdv;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.ServiceUrlProvider;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.SubscriptionType;
import org.apache.pulsar.client.api.transaction.Transaction;
import org.apache.pulsar.client.impl.AutoClusterFailover;
import org.apache.pulsar.client.impl.ControlledClusterFailover;

/**
 * pulsarsim's scenario driver for the Java client (org.apache.pulsar:pulsar-client).
 *
 * <p>It reads one scenario as JSON (from the file named by its first argument, or from stdin),
 * subscribes, produces the scenario's messages itself (unbatched, each with a property "i"),
 * answers every delivery as the scenario's script says, and prints one JSON line per thing it saw
 * or did. The format is described in scenarios/clients/README.md.
 */
public final class Driver {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final long START = System.nanoTime();
  private static PrintStream out;

  private Driver() {}

  public static void main(String[] args) {
    // Library logging must not mix with the trace: the trace keeps the real
    // stdout, and everything else printed to System.out goes to stderr.
    out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, StandardCharsets.UTF_8);
    System.setOut(System.err);
    int code = 0;
    try {
      run(args);
    } catch (Throwable e) {
      Map<String, Object> ev = new LinkedHashMap<>();
      ev.put("event", "error");
      ev.put("message", e.toString());
      emit(ev);
      code = 1;
    }
    out.flush();
    Runtime.getRuntime().halt(code);
  }

  private static synchronized void emit(Map<String, Object> ev) {
    ev.put("t_ms", (System.nanoTime() - START) / 1e6);
    try {
      out.println(JSON.writeValueAsString(ev));
    } catch (Exception e) {
      out.println("{\"event\":\"error\",\"message\":\"json\"}");
    }
    out.flush();
  }

  private static Map<String, Object> event(String name) {
    Map<String, Object> ev = new LinkedHashMap<>();
    ev.put("event", name);
    return ev;
  }

  static String formatId(MessageId id) {
    if (id instanceof MessageIdAdv a) {
      return a.getLedgerId() + ":" + a.getEntryId() + ":" + a.getPartitionIndex() + ":" + a.getBatchIndex();
    }
    return id.toString();
  }

  private static String outcome(JsonNode sc, String index, int attempt) {
    JsonNode script = sc.path("script");
    JsonNode steps = script.has(index) ? script.get(index) : script.path("*");
    if (steps.isArray() && attempt < steps.size()) {
      return steps.get(attempt).asText();
    }
    return sc.path("default").asText("ack");
  }

  private static SubscriptionType subType(String name) {
    switch (name) {
      case "Exclusive": return SubscriptionType.Exclusive;
      case "Shared": return SubscriptionType.Shared;
      case "Failover": return SubscriptionType.Failover;
      case "Key_Shared":
      case "KeyShared": return SubscriptionType.Key_Shared;
      default: throw new IllegalArgumentException("unknown subscription type " + name);
    }
  }

  /**
   * Consumes, transforms and produces in one transaction: the output "out-" + payload to the output
   * topic and the acknowledgement of msg, then the commit or the abort.
   */
  private static void transform(PulsarClient client, Consumer<byte[]> consumer, Producer<byte[]> output,
      Message<byte[]> msg, int index, int attempt, boolean commit) throws Exception {
    Transaction txn = client.newTransaction().withTransactionTimeout(1, TimeUnit.MINUTES).build().get();
    MessageId outId = output.newMessage(txn)
        .value(("out-" + new String(msg.getValue(), StandardCharsets.UTF_8)).getBytes(StandardCharsets.UTF_8))
        .property("i", Integer.toString(index))
        .send();
    consumer.acknowledgeAsync(msg.getMessageId(), txn).get();
    if (commit) {
      txn.commit().get();
    } else {
      txn.abort().get();
    }
    Map<String, Object> ev = event("txn");
    ev.put("i", index);
    ev.put("attempt", attempt);
    ev.put("txn", txn.getTxnID().toString());
    ev.put("outcome", commit ? "committed" : "aborted");
    ev.put("output_id", formatId(outId));
    emit(ev);
  }

  /**
   * The client's cluster failover, when the scenario asks for one: "failover" with "secondary" (a
   * service URL), "check_interval_ms", "failover_delay_ms" and "switch_back_delay_ms" is an
   * AutoClusterFailover from service_url to it; "controlled_failover" with "url_provider" (an
   * http:// URL answering the service URL to use) and "check_interval_ms" is a
   * ControlledClusterFailover starting at service_url. Null for neither.
   */
  private static ServiceUrlProvider failoverProvider(JsonNode sc) throws Exception {
    JsonNode auto = sc.path("failover");
    if (auto.isObject()) {
      return AutoClusterFailover.builder()
          .primary(sc.get("service_url").asText())
          .secondary(List.of(auto.get("secondary").asText()))
          .checkInterval(auto.path("check_interval_ms").asLong(1000), TimeUnit.MILLISECONDS)
          .failoverDelay(auto.path("failover_delay_ms").asLong(1000), TimeUnit.MILLISECONDS)
          .switchBackDelay(auto.path("switch_back_delay_ms").asLong(1000), TimeUnit.MILLISECONDS)
          .build();
    }
    JsonNode controlled = sc.path("controlled_failover");
    if (controlled.isObject()) {
      return ControlledClusterFailover.builder()
          .defaultServiceUrl(sc.get("service_url").asText())
          .urlProvider(controlled.get("url_provider").asText())
          .checkInterval(controlled.path("check_interval_ms").asLong(1000), TimeUnit.MILLISECONDS)
          .build();
    }
    return null;
  }

  private static void run(String[] args) throws Exception {
    JsonNode sc = args.length > 0 && !args[0].equals("-")
        ? JSON.readTree(new File(args[0]))
        : JSON.readTree(System.in);
    Map<String, Object> start = event("start");
    start.put("client", "java");
    start.put("library", "org.apache.pulsar:pulsar-client");
    start.put("version", PulsarClient.class.getPackage().getImplementationVersion());
    emit(start);

    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(sc.path("deadline_ms").asLong(60000));
    JsonNode stop = sc.path("stop");
    int stopAcked = stop.path("acked").asInt(0);
    int stopDeliveries = stop.path("deliveries").asInt(0);
    AtomicBoolean stdinClosed = new AtomicBoolean(false);
    // With produce_on_stdin, each line read from stdin asks for one more
    // message; otherwise stdin is only watched for its end.
    boolean produceOnStdin = sc.path("produce_on_stdin").asBoolean(false);
    LinkedBlockingQueue<Boolean> produceAsked = new LinkedBlockingQueue<>();
    if (stop.path("stdin_eof").asBoolean(false)) {
      Thread t = new Thread(() -> {
        try {
          InputStream in = System.in;
          byte[] buf = new byte[256];
          int read;
          while ((read = in.read(buf)) >= 0) {
            for (int k = 0; k < read && produceOnStdin; k++) {
              if (buf[k] == '\n') {
                produceAsked.add(true);
              }
            }
          }
        } catch (Exception ignored) {
          // end of input either way
        }
        stdinClosed.set(true);
      }, "stdin-watch");
      t.setDaemon(true);
      t.start();
    }

    String topic = sc.get("topic").asText();
    ClientBuilder clientBuilder = PulsarClient.builder();
    ServiceUrlProvider failover = failoverProvider(sc);
    if (failover != null) {
      clientBuilder.serviceUrlProvider(failover);
    } else {
      clientBuilder.serviceUrl(sc.get("service_url").asText());
    }
    if (sc.hasNonNull("tls_trust_certs_file")) {
      clientBuilder.tlsTrustCertsFilePath(sc.get("tls_trust_certs_file").asText())
          .allowTlsInsecureConnection(false)
          .enableTlsHostnameVerification(sc.path("tls_validate_hostname").asBoolean(false));
    }
    if (sc.hasNonNull("auth_token")) {
      clientBuilder.authentication(AuthenticationFactory.token(sc.get("auth_token").asText()));
    }
    String outputTopic = sc.hasNonNull("output_topic") ? sc.get("output_topic").asText() : null;
    if (outputTopic != null) {
      clientBuilder.enableTransaction(true);
    }
    PulsarClient client = clientBuilder.build();
    ConsumerBuilder<byte[]> cb = client.newConsumer()
        .topic(topic)
        .subscriptionName(sc.get("subscription").asText())
        .subscriptionType(subType(sc.path("subscription_type").asText("Shared")))
        .consumerName("java-driver")
        .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest);
    long ackTimeout = sc.path("ack_timeout_ms").asLong(0);
    if (ackTimeout > 0) {
      cb.ackTimeout(ackTimeout, TimeUnit.MILLISECONDS);
    }
    long nackDelay = sc.path("nack_delay_ms").asLong(0);
    if (nackDelay > 0) {
      cb.negativeAckRedeliveryDelay(nackDelay, TimeUnit.MILLISECONDS);
    }
    JsonNode dl = sc.path("dead_letter");
    if (dl.isObject()) {
      cb.deadLetterPolicy(DeadLetterPolicy.builder()
          .maxRedeliverCount(dl.get("max_redeliver_count").asInt())
          .deadLetterTopic(dl.get("topic").asText())
          .build());
    }
    Consumer<byte[]> consumer = cb.subscribe();
    emit(event("subscribed"));

    Producer<byte[]> producer = client.newProducer()
        .topic(topic)
        .producerName("java-driver-producer")
        .enableBatching(false)
        .create();
    int n = sc.path("messages").asInt(0);
    for (int i = 0; i < n; i++) {
      MessageId id = producer.newMessage()
          .key("k" + i)
          .value(("m" + i).getBytes(StandardCharsets.UTF_8))
          .property("i", Integer.toString(i))
          .send();
      Map<String, Object> ev = event("produced");
      ev.put("i", i);
      ev.put("id", formatId(id));
      emit(ev);
    }

    // With an output topic the handler may also consume, transform and
    // produce in a transaction: "txn-commit" and "txn-abort".
    Producer<byte[]> output = outputTopic == null ? null : client.newProducer()
        .topic(outputTopic)
        .producerName("java-driver-output")
        .enableBatching(false)
        .sendTimeout(0, TimeUnit.SECONDS)
        .create();

    Map<String, Integer> attempts = new HashMap<>();
    Set<String> acked = new HashSet<>();
    int deliveries = 0;
    int next = n;
    String serviceUrl = null;
    String reason;
    while (true) {
      if (failover != null && !failover.getServiceUrl().equals(serviceUrl)) {
        serviceUrl = failover.getServiceUrl();
        Map<String, Object> ev = event("service_url");
        ev.put("payload", serviceUrl);
        emit(ev);
      }
      while (produceAsked.poll() != null) {
        int i = next++;
        producer.newMessage()
            .key("k" + i)
            .value(("m" + i).getBytes(StandardCharsets.UTF_8))
            .property("i", Integer.toString(i))
            .sendAsync()
            .whenComplete((id, err) -> {
              Map<String, Object> ev = event(err == null ? "produced" : "send_failed");
              ev.put("i", i);
              if (err == null) {
                ev.put("id", formatId(id));
              } else {
                ev.put("message", err.toString());
              }
              emit(ev);
            });
      }
      if (stopAcked > 0 && acked.size() >= stopAcked) {
        reason = "acked";
        break;
      }
      if (stopDeliveries > 0 && deliveries >= stopDeliveries) {
        reason = "deliveries";
        break;
      }
      if (stdinClosed.get()) {
        reason = "stdin";
        break;
      }
      if (System.nanoTime() >= deadline) {
        reason = "deadline";
        break;
      }
      Message<byte[]> msg = consumer.receive(100, TimeUnit.MILLISECONDS);
      if (msg == null) {
        continue;
      }
      deliveries++;
      Map<String, String> props = new TreeMap<>(msg.getProperties());
      String index = props.getOrDefault("i", "");
      int attempt = attempts.getOrDefault(index, 0);
      attempts.put(index, attempt + 1);
      String action = outcome(sc, index, attempt);
      Map<String, Object> ev = event("received");
      int iv = -1;
      try {
        iv = Integer.parseInt(index);
      } catch (NumberFormatException ignored) {
        // not one of ours
      }
      ev.put("i", iv);
      ev.put("attempt", attempt);
      ev.put("id", formatId(msg.getMessageId()));
      ev.put("payload", new String(msg.getValue(), StandardCharsets.UTF_8));
      ev.put("redelivery_count", msg.getRedeliveryCount());
      ev.put("properties", props);
      ev.put("action", action);
      emit(ev);
      switch (action) {
        case "ack":
          consumer.acknowledge(msg);
          acked.add(index);
          break;
        case "nack":
          consumer.negativeAcknowledge(msg);
          break;
        case "none":
          break;
        case "txn-commit":
        case "txn-abort":
          boolean commit = action.equals("txn-commit");
          transform(client, consumer, output, msg, iv, attempt, commit);
          if (commit) {
            acked.add(index);
          }
          break;
        default:
          throw new IllegalArgumentException("unknown outcome " + action);
      }
    }
    consumer.close();
    producer.close();
    if (output != null) {
      output.close();
    }
    client.close();
    Map<String, Object> done = event("done");
    done.put("reason", reason);
    done.put("deliveries", deliveries);
    done.put("acked", acked.size());
    emit(done);
  }
}
