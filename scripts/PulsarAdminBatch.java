// PulsarAdminBatch runs pulsar-admin (and pulsar-client) commands in one
// JVM, for scripts/pulsar-admin-check: starting a JVM for each command
// takes longer than the command. Each pulsar-admin command goes through the
// real CLI's own entry point (org.apache.pulsar.admin.cli.PulsarAdminTool's
// execute, which bin/pulsar-admin's main calls) with System.exit turned off,
// the mode Pulsar's own tests use; the exit code is the one the CLI would
// have exited with. A line whose first field is "pulsar-client" runs the rest
// through org.apache.pulsar.client.cli.PulsarClientTool, as bin/pulsar-client
// would. A line whose first field is --conf=FILE runs with that client
// configuration instead of CLIENT_CONF.
//
// Usage: java -cp "$PULSAR_HOME/lib/*" PulsarAdminBatch.java CLIENT_CONF
//
// It reads one command a line on standard input, its arguments separated by
// tabs, and writes for each:
//
//   @@@ BEGIN <n>
//   <what the command printed, standard output and error>
//   @@@ END <n> exit=<code>

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.FileInputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.regex.Pattern;

public class PulsarAdminBatch {
    // What PulsarAdminTool prints where it would have called System.exit.
    private static final Pattern EXIT_NOTE = Pattern.compile(
            "(?m)^Exit code is -?\\d+ \\(System.exit not called, as we are in test mode\\)\\R?");

    private final String conf; // the client configuration, unless a line names another
    private final Method adminExecute;
    private final Method adminLastExit;

    private PulsarAdminBatch(String conf) throws Exception {
        this.conf = conf;
        Class<?> tool = Class.forName("org.apache.pulsar.admin.cli.PulsarAdminTool");
        Field allowExit = tool.getDeclaredField("allowSystemExit");
        allowExit.setAccessible(true);
        allowExit.setBoolean(null, false);
        adminExecute = tool.getMethod("execute", String[].class);
        adminLastExit = tool.getDeclaredMethod("getLastExitCode");
        adminLastExit.setAccessible(true);
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: PulsarAdminBatch CLIENT_CONF < commands");
            System.exit(2);
        }
        PulsarAdminBatch batch = new PulsarAdminBatch(args[0]);
        PrintStream out = System.out;
        PrintStream err = System.err;
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        int n = 0;
        while ((line = in.readLine()) != null) {
            n++;
            List<String> argv = new ArrayList<>();
            for (String a : line.split("\t", -1)) {
                if (!a.isEmpty()) {
                    argv.add(a);
                }
            }
            ByteArrayOutputStream buf = new ByteArrayOutputStream();
            PrintStream capture = new PrintStream(buf, true, StandardCharsets.UTF_8);
            System.setOut(capture);
            System.setErr(capture);
            int code;
            try {
                code = batch.run(argv);
            } catch (Throwable e) {
                Throwable cause = e instanceof InvocationTargetException && e.getCause() != null ? e.getCause() : e;
                capture.println("PulsarAdminBatch: " + cause);
                code = 255;
            } finally {
                capture.flush();
                System.setOut(out);
                System.setErr(err);
            }
            String text = EXIT_NOTE.matcher(buf.toString(StandardCharsets.UTF_8)).replaceAll("");
            out.println("@@@ BEGIN " + n);
            out.print(text);
            if (!text.isEmpty() && !text.endsWith("\n")) {
                out.println();
            }
            out.println("@@@ END " + n + " exit=" + code);
            out.flush();
        }
        // The admin client leaves non-daemon threads behind.
        System.exit(0);
    }

    private int run(List<String> argv) throws Exception {
        String conf = this.conf;
        if (!argv.isEmpty() && argv.get(0).startsWith("--conf=")) {
            conf = argv.remove(0).substring("--conf=".length());
        }
        if (!argv.isEmpty() && argv.get(0).equals("pulsar-client")) {
            Properties props = new Properties();
            try (InputStream f = new FileInputStream(conf)) {
                props.load(f);
            }
            Class<?> tool = Class.forName("org.apache.pulsar.client.cli.PulsarClientTool");
            Object client = tool.getConstructor(Properties.class).newInstance(props);
            String[] rest = argv.subList(1, argv.size()).toArray(new String[0]);
            return (Integer) tool.getMethod("run", String[].class).invoke(client, (Object) rest);
        }
        List<String> full = new ArrayList<>(Arrays.asList(conf));
        full.addAll(argv);
        adminExecute.invoke(null, (Object) full.toArray(new String[0]));
        return (Integer) adminLastExit.invoke(null);
    }
}
