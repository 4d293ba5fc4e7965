package pulsarsim.tc;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.transaction.Transaction;
import org.testcontainers.containers.PulsarContainer;
import org.testcontainers.utility.DockerImageName;

/**
 * What a user's Java test does with Testcontainers' Pulsar module: start a
 * container, produce and consume with the Java client, commit a transaction
 * on a container started with transactions. Prints one "ok ..." line per
 * check and exits non-zero at the first that fails.
 */
public class Main {
  static void check(boolean ok, String what) {
    if (!ok) {
      System.out.println("FAILED " + what);
      System.exit(1);
    }
    System.out.println("ok " + what);
  }

  public static void main(String[] args) throws Exception {
    DockerImageName image = DockerImageName.parse("apachepulsar/pulsar:4.0.8");
    try (PulsarContainer pulsar = new PulsarContainer(image)) {
      pulsar.start();
      String clusters = HttpClient.newHttpClient()
          .send(HttpRequest.newBuilder(URI.create(pulsar.getHttpServiceUrl() + "/admin/v2/clusters")).build(),
              HttpResponse.BodyHandlers.ofString())
          .body();
      check(clusters.equals("[\"standalone\"]"), "the container's admin API answers " + clusters);
      try (PulsarClient client = PulsarClient.builder().serviceUrl(pulsar.getPulsarBrokerUrl()).build()) {
        Consumer<byte[]> consumer = client.newConsumer().topic("tc-plain").subscriptionName("s").subscribe();
        Producer<byte[]> producer = client.newProducer().topic("tc-plain").create();
        producer.send("hello".getBytes());
        Message<byte[]> m = consumer.receive(30, TimeUnit.SECONDS);
        check(m != null && new String(m.getData()).equals("hello"), "a message produced is consumed");
        consumer.acknowledge(m);
      }
    }
    try (PulsarContainer pulsar = new PulsarContainer(image).withTransactions()) {
      pulsar.start();
      try (PulsarClient client = PulsarClient.builder().serviceUrl(pulsar.getPulsarBrokerUrl())
          .enableTransaction(true).build()) {
        Consumer<byte[]> consumer = client.newConsumer().topic("tc-txn").subscriptionName("s").subscribe();
        Producer<byte[]> producer = client.newProducer().topic("tc-txn").sendTimeout(0, TimeUnit.SECONDS).create();
        Transaction txn = client.newTransaction().withTransactionTimeout(1, TimeUnit.MINUTES).build().get();
        producer.newMessage(txn).value("in a transaction".getBytes()).send();
        check(consumer.receive(500, TimeUnit.MILLISECONDS) == null, "nothing is delivered before the commit");
        txn.commit().get();
        Message<byte[]> m = consumer.receive(30, TimeUnit.SECONDS);
        check(m != null && new String(m.getData()).equals("in a transaction"), "the committed message is delivered");
      }
    }
    System.out.println("done");
  }
}
