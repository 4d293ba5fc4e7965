package scenarios_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/scenarios"
	"google.golang.org/protobuf/proto"
)

// TestDifferentialWebSocket drives the WebSocket API (gorilla/websocket as
// the client) through the same story on pulsarsim and on the Pulsar of
// PULSAR_URL and PULSAR_ADMIN_URL, a standalone with
// webSocketServiceEnabled=true (scripts/oracle-check starts it so), and
// compares every answer: the HTTP refusals (status and message), the
// producer's answers, the pushed messages (their JSON as written, message
// ids decoded and ledgers masked, times checked for their form), negative
// acks and the ack timeout with their counts, the dead letter, readers,
// isEndOfTopic, and the closes that bad frames bring.
func TestDifferentialWebSocket(t *testing.T) {
	sameStoryOnBoth(t, webSocketStory)
}

func webSocketStory(t *testing.T, tg *scenarios.Target, admin string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	base := "ws" + strings.TrimPrefix(admin, "http")
	topic := tg.Topic("ws-diff")
	path := strings.TrimPrefix(topic, "persistent://")
	var notes []string
	note := func(format string, args ...any) {
		s := fmt.Sprintf(format, args...)
		s = strings.ReplaceAll(s, topic, "TOPIC")
		notes = append(notes, s)
	}

	// Refusals.
	for _, p := range []string{
		"/ws/v2/producer/persistent/" + path + "?compressionType=FOO",
		"/ws/v2/producer/persistent/" + path + "?hashingScheme=Bad",
		"/ws/v2/producer/persistent/" + path + "?messageRoutingMode=Bad",
		"/ws/v2/producer/persistent/" + path + "?sendTimeoutMillis=x",
		"/ws/v2/producer/persistent/" + path + "?initialSequenceId=x",
		"/ws/v2/producer/persistent/public/nosuch/t",
		"/ws/v2/consumer/persistent/" + path + "/s?receiverQueueSize=abc",
		"/ws/v2/consumer/persistent/" + path + "/s?receiverQueueSize=-1",
		"/ws/v2/consumer/persistent/" + path + "/s?subscriptionType=Foo",
		"/ws/v2/consumer/persistent/" + path + "/s?subscriptionMode=Foo",
		"/ws/v2/consumer/persistent/" + path + "/s?subscriptionInitialPosition=Foo",
		"/ws/v2/consumer/persistent/" + path + "/s?ackTimeoutMillis=500",
		"/ws/v2/consumer/persistent/" + path + "/s?consumerName=%20",
		"/ws/v2/consumer/persistent/" + path + "/s?priorityLevel=-1",
		"/ws/v2/consumer/persistent/" + path + "/s?negativeAckRedeliveryDelay=-1",
		"/ws/v2/consumer/persistent/" + path + "/s?deadLetterTopic=x",
		"/ws/v2/consumer/persistent/" + path + "/s?maxRedeliverCount=0",
		"/ws/v2/consumer/persistent/" + path,
		"/ws/v2/consumer/persistent/public/nosuch/t/s",
		"/ws/v2/reader/persistent/" + path + "?messageId=zz",
		"/ws/v2/nothing/persistent/" + path,
		"/ws/v2/reader/persistent/" + path + "?receiverQueueSize=abc",
		"/ws/v2/reader/persistent/" + path + "?receiverQueueSize=-5",
		"/ws/v2/producer/persistent/public/default/",
		"/ws/v2/producer/persistent/public",
		"/ws/v2/producer/foo/public/default/t",
		"/ws/v2/consumer/persistent/" + path + "/",
		"/ws/v2/producer/persistent/" + path + "?encryptionKeys=a,b",
		"/ws/v2/producer/persistent/" + path + "?batchingEnabled=true&batchingMaxMessages=x",
		"/ws/v2/producer/persistent/" + path + "?batchingEnabled=false&batchingMaxMessages=x",
		"/ws/v2/consumer/persistent/" + path + "/s?cryptoFailureAction=Bad",
	} {
		status, msg := refusal(ctx, t, base+p, "13")
		note("refused %s: %s %s", maskPath(p, path), status, msg)
	}
	// A second consumer on an Exclusive subscription.
	ex := wsDial(ctx, t, base+"/ws/v2/consumer/persistent/"+path+"/exclusive")
	status, msg := refusal(ctx, t, base+"/ws/v2/consumer/persistent/"+path+"/exclusive", "13")
	note("a second Exclusive consumer: %s %s", status, msg)
	ex.Close()
	status, msg = refusal(ctx, t, base+"/ws/v2/producer/persistent/"+path, "8")
	note("version 8: %s %s", status, msg)
	resp, err := http.Get(admin + "/ws/v2/producer/persistent/" + path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	note("plain GET: %s", resp.Status)

	// A consumer, then a producer and what it answers.
	c := wsDial(ctx, t, base+"/ws/v2/consumer/persistent/"+path+"/sub?subscriptionType=Shared&negativeAckRedeliveryDelay=0")
	p := wsDial(ctx, t, base+"/ws/v2/producer/persistent/"+path)
	var produced []string
	for _, f := range []string{
		`{"payload":"aGVsbG8=","properties":{"a":"1","b":"2"},"context":"c1","key":"k","eventTime":"2024-01-02T03:04:05.120Z"}`,
		`{"payload":"aGVsbG8=","context":"c2"}`,
		`{"payload":"***","context":"c3"}`,
		`{"context":"c4"}`,
		`not json`,
		`{"payload":"aGVsbG8=","eventTime":"yesterday","context":"c5"}`,
		`{"payload":"d29ybGQ","context":"c6","unknownField":1}`,
	} {
		if err := p.WriteMessage(websocket.TextMessage, []byte(f)); err != nil {
			t.Fatal(err)
		}
		answer := wsRead(t, p)
		var a struct {
			MessageID string `json:"messageId"`
		}
		_ = json.Unmarshal(answer, &a)
		if a.MessageID != "" {
			produced = append(produced, a.MessageID)
		}
		note("send %s -> %s", f, maskFrame(answer))
	}

	// Pushes: three messages; the first nacked comes back with count 1.
	pushed := map[string]int{}
	for range 3 {
		m := wsRead(t, c)
		note("pushed %s", maskFrame(m))
		var pm struct {
			MessageID, Payload string
		}
		_ = json.Unmarshal(m, &pm)
		pushed[pm.MessageID]++
		if pm.MessageID == produced[0] {
			wsWrite(t, c, `{"type":"negativeAcknowledge","messageId":"`+pm.MessageID+`"}`)
		} else {
			wsWrite(t, c, `{"messageId":"`+pm.MessageID+`"}`)
		}
	}
	again := wsRead(t, c)
	note("after the nack %s", maskFrame(again))
	var ag struct{ MessageID string }
	_ = json.Unmarshal(again, &ag)
	note("the nacked one is the first produced: %v", ag.MessageID == produced[0])
	wsWrite(t, c, `{"messageId":"`+ag.MessageID+`"}`)
	wsWrite(t, c, `{"type":"isEndOfTopic"}`)
	note("isEndOfTopic: %s", wsRead(t, c))

	// A reader from the earliest message reads what was produced, by id.
	r := wsDial(ctx, t, base+"/ws/v2/reader/persistent/"+path+"?messageId=earliest")
	for i := range produced {
		var m struct{ MessageID string }
		_ = json.Unmarshal(wsRead(t, r), &m)
		note("reader %d is the produced one: %v", i, m.MessageID == produced[i])
		wsWrite(t, r, `{"messageId":"`+m.MessageID+`"}`)
	}
	r2 := wsDial(ctx, t, base+"/ws/v2/reader/persistent/"+path+"?messageId="+strings.ReplaceAll(produced[0], "+", "%2B"))
	var m2 struct{ MessageID string }
	_ = json.Unmarshal(wsRead(t, r2), &m2)
	note("a reader from the first id starts at the second: %v", m2.MessageID == produced[1])

	// The ack timeout: an unanswered message comes back with count 1; a
	// dead-letter policy of one redelivery moves a twice-nacked one aside.
	to := wsDial(ctx, t, base+"/ws/v2/consumer/persistent/"+path+"/timeout?subscriptionType=Shared&ackTimeoutMillis=1000&subscriptionInitialPosition=Earliest")
	var timedOut []string
	for range 2 * len(produced) {
		var pm struct {
			MessageID       string
			RedeliveryCount int
		}
		_ = json.Unmarshal(wsRead(t, to), &pm)
		timedOut = append(timedOut, fmt.Sprintf("%s count %d", describeID(pm.MessageID), pm.RedeliveryCount))
	}
	sort.Strings(timedOut)
	note("ack timeout, every message twice: %v", timedOut)
	one := wsDial(ctx, t, base+"/ws/v2/producer/persistent/"+path+"-one")
	wsWrite(t, one, `{"payload":"cG9pc29u","properties":{"p":"1"},"key":"pk"}`)
	note("the poison message: %s", maskFrame(wsRead(t, one)))
	dl := wsDial(ctx, t, base+"/ws/v2/consumer/persistent/"+path+"-one/dl?subscriptionType=Shared&negativeAckRedeliveryDelay=0&maxRedeliverCount=1&subscriptionInitialPosition=Earliest")
	for i := range 2 {
		m := wsRead(t, dl)
		var pm struct {
			MessageID       string
			RedeliveryCount int
		}
		_ = json.Unmarshal(m, &pm)
		note("dead-letter policy, delivery %d: count %d", i, pm.RedeliveryCount)
		wsWrite(t, dl, `{"type":"negativeAcknowledge","messageId":"`+pm.MessageID+`"}`)
	}
	dr := wsDial(ctx, t, base+"/ws/v2/reader/persistent/"+path+"-one-dl-DLQ?messageId=earliest")
	dead := wsRead(t, dr)
	var dm struct {
		Payload    string
		Properties map[string]string
	}
	_ = json.Unmarshal(dead, &dm)
	var keys []string
	for k, v := range dm.Properties {
		if k == "ORIGIN_MESSAGE_ID" || k == "ORIGIN_MESSAGE_IDY_TIME" {
			v = regexp.MustCompile(`^\d+:`).ReplaceAllString(v, "L:")
		}
		keys = append(keys, k+"="+strings.ReplaceAll(v, topic, "TOPIC"))
		_ = v
	}
	sort.Strings(keys)
	note("dead letter %s with %v", dm.Payload, keys)

	// A batching producer: three messages in one batch; an Exclusive
	// consumer's nack of one brings back every unacked message, count 0.
	bc := wsDial(ctx, t, base+"/ws/v2/consumer/persistent/"+path+"-batch/sub?negativeAckRedeliveryDelay=0")
	bp := wsDial(ctx, t, base+"/ws/v2/producer/persistent/"+path+"-batch?batchingEnabled=true&batchingMaxMessages=3&batchingMaxPublishDelay=1000")
	for i := range 3 {
		wsWrite(t, bp, fmt.Sprintf(`{"payload":"YmF0Y2g=","context":"b%d"}`, i))
	}
	for range 3 {
		note("batched send -> %s", maskFrame(wsRead(t, bp)))
	}
	var batchIDs []string
	for range 3 {
		m := wsRead(t, bc)
		note("batched push %s", maskFrame(m))
		var pm struct{ MessageID string }
		_ = json.Unmarshal(m, &pm)
		batchIDs = append(batchIDs, pm.MessageID)
	}
	wsWrite(t, bc, `{"type":"negativeAcknowledge","messageId":"`+batchIDs[1]+`"}`)
	for range 3 {
		note("after an Exclusive nack %s", maskFrame(wsRead(t, bc)))
	}
	for _, id := range batchIDs {
		wsWrite(t, bc, `{"messageId":"`+id+`"}`)
	}

	// A partitioned topic: keys route by the Java string hash, ids carry
	// the partition.
	req, _ := http.NewRequest(http.MethodPut, admin+"/admin/v2/persistent/"+path+"-part/partitions", strings.NewReader("2"))
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
		note("partitioned topic created: %d", resp.StatusCode)
	}
	for _, p := range []string{"/ws/v2/consumer/persistent/" + path + "-part/s?receiverQueueSize=0",
		"/ws/v2/reader/persistent/" + path + "-part?receiverQueueSize=0"} {
		status, msg := refusal(ctx, t, base+p, "13")
		note("zero queue on a partitioned topic %s: %s %s", maskPath(p, path), status, msg)
	}
	pc := wsDial(ctx, t, base+"/ws/v2/consumer/persistent/"+path+"-part/sub")
	pp := wsDial(ctx, t, base+"/ws/v2/producer/persistent/"+path+"-part")
	for _, k := range []string{"a", "b", "c"} {
		wsWrite(t, pp, `{"payload":"cGFydA==","key":"`+k+`","context":"`+k+`"}`)
		note("partitioned send %s -> %s", k, maskFrame(wsRead(t, pp)))
	}
	var parts []string
	for range 3 {
		parts = append(parts, maskFrame(wsRead(t, pc)))
	}
	sort.Strings(parts)
	note("partitioned pushes %v", parts)

	// A non-persistent topic.
	nc := wsDial(ctx, t, base+"/ws/v2/consumer/non-persistent/"+path+"-np/sub")
	np := wsDial(ctx, t, base+"/ws/v2/producer/non-persistent/"+path+"-np")
	wsWrite(t, np, `{"payload":"bnA=","context":"np"}`)
	note("non-persistent send -> %s", maskFrame(wsRead(t, np)))
	note("non-persistent push %s", maskFrame(wsRead(t, nc)))

	// Client-side encryption: the producer stores what the client
	// encrypted with its keys and parameter; a consumer with CONSUME gets
	// it with its encryption context, one with FAIL (the default) never
	// gets it, a reader with CONSUME gets it without the context.
	encKeys := base64.StdEncoding.EncodeToString([]byte(`{"mykey":{"keyValue":"AQID","metadata":{"k":"v"}}}`))
	ec := wsDial(ctx, t, base+"/ws/v2/consumer/persistent/"+path+"-enc/c?cryptoFailureAction=CONSUME")
	ef := wsDial(ctx, t, base+"/ws/v2/consumer/persistent/"+path+"-enc/f")
	ep := wsDial(ctx, t, base+"/ws/v2/producer/persistent/"+path+"-enc?encryptionKeys="+url.QueryEscape(encKeys))
	for _, f := range []string{
		`{"payload":"Y2lwaGVy","encryptionParam":"cGFyYW0=","context":"e1"}`,
		`{"payload":"Y2lwaGVy","compressionType":"LZ4","context":"e2"}`,
		`{"payload":"Y2lwaGVy","encryptionParam":"!!","context":"e3"}`,
	} {
		wsWrite(t, ep, f)
		note("encrypted send %s -> %s", f, maskFrame(wsRead(t, ep)))
	}
	note("CONSUME push %s", maskFrame(wsRead(t, ec)))
	plain := wsDial(ctx, t, base+"/ws/v2/producer/persistent/"+path+"-enc")
	wsWrite(t, plain, `{"payload":"cGxhaW4=","context":"plain"}`)
	wsRead(t, plain)
	note("FAIL push (the encrypted one skipped) %s", maskFrame(wsRead(t, ef)))
	er := wsDial(ctx, t, base+"/ws/v2/reader/persistent/"+path+"-enc?messageId=earliest&cryptoFailureAction=CONSUME")
	note("CONSUME reader %s", maskFrame(wsRead(t, er)))

	// Delayed delivery on Shared: the delayed message comes after the one
	// sent later without a delay.
	dc := wsDial(ctx, t, base+"/ws/v2/consumer/persistent/"+path+"-delay/s?subscriptionType=Shared")
	dp := wsDial(ctx, t, base+"/ws/v2/producer/persistent/"+path+"-delay")
	wsWrite(t, dp, `{"payload":"bGF0ZXI=","deliverAfterMs":1500,"context":"later"}`)
	wsWrite(t, dp, `{"payload":"bm93","context":"now"}`)
	for range 2 {
		note("delayed send -> %s", maskFrame(wsRead(t, dp)))
	}
	for range 2 {
		var m struct{ Payload string }
		_ = json.Unmarshal(wsRead(t, dc), &m)
		note("delayed push %s", m.Payload)
	}

	// A zero receiver queue: one message at a time, the next after the ack.
	zq := wsDial(ctx, t, base+"/ws/v2/consumer/persistent/"+path+"/zero?receiverQueueSize=0&subscriptionInitialPosition=Earliest")
	for range 2 {
		m := wsRead(t, zq)
		note("zero queue push %s", maskFrame(m))
		wsWrite(t, zq, `{"type":"isEndOfTopic"}`)
		note("zero queue, before the ack: %s", wsRead(t, zq))
		var pm struct{ MessageID string }
		_ = json.Unmarshal(m, &pm)
		wsWrite(t, zq, `{"messageId":"`+pm.MessageID+`"}`)
	}

	// Pull mode: only permitted messages are pushed; acks permit nothing.
	pull := wsDial(ctx, t, base+"/ws/v2/consumer/persistent/"+path+"/pull?pullMode=true&subscriptionInitialPosition=Earliest")
	wsWrite(t, pull, `{"type":"permit","permitMessages":2}`)
	for range 2 {
		m := wsRead(t, pull)
		note("pull push %s", maskFrame(m))
		var pm struct{ MessageID string }
		_ = json.Unmarshal(m, &pm)
		wsWrite(t, pull, `{"messageId":"`+pm.MessageID+`"}`)
	}
	wsWrite(t, pull, `{"type":"isEndOfTopic"}`)
	note("pull, two acked, then %s", wsRead(t, pull))
	wsWrite(t, pull, `{"type":"permit","permitMessages":1}`)
	note("pull push after one more permit %s", maskFrame(wsRead(t, pull)))

	// Unsubscribe: alone on its subscription, it goes (the session stays
	// open); beside another consumer it fails, and the connection closes.
	subsOf := func(topicPath string) string {
		resp, err := http.Get(admin + "/admin/v2/persistent/" + topicPath + "/subscriptions")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var subs []string
		_ = json.NewDecoder(resp.Body).Decode(&subs)
		sort.Strings(subs)
		return fmt.Sprint(subs)
	}
	u1 := wsDial(ctx, t, base+"/ws/v2/consumer/persistent/"+path+"-unsub/alone")
	u2 := wsDial(ctx, t, base+"/ws/v2/consumer/persistent/"+path+"-unsub/shared?subscriptionType=Shared")
	_ = wsDial(ctx, t, base+"/ws/v2/consumer/persistent/"+path+"-unsub/shared?subscriptionType=Shared")
	note("subscriptions before: %s", subsOf(path+"-unsub"))
	wsWrite(t, u1, `{"type":"unsubscribe"}`)
	wsWrite(t, u1, `{"type":"isEndOfTopic"}`)
	answer := wsRead(t, u1) // frames are handled in order: the unsubscribe is done
	note("after an unsubscribe alone the session answers %s; subscriptions %s", answer, subsOf(path+"-unsub"))
	wsWrite(t, u2, `{"type":"unsubscribe"}`)
	note("an unsubscribe beside another consumer: %s", closeOf(u2))
	note("subscriptions after: %s", subsOf(path+"-unsub"))

	// Bad frames: a consumer closes at a frame that is not JSON without a
	// close frame, at an ack whose id is not base64 with 1011.
	for _, f := range []string{`garbage`, `{"messageId":"!!!"}`, `{"type":"permit"}`} {
		bc := wsDial(ctx, t, base+"/ws/v2/consumer/persistent/"+path+"/bad"+fmt.Sprint(len(f))+"?subscriptionInitialPosition=Earliest")
		wsWrite(t, bc, f)
		note("consumer frame %s: %s", f, closeOf(bc))
	}

	// The end of a terminated topic, once everything is acknowledged.
	req, _ = http.NewRequest(http.MethodPost, admin+"/admin/v2/persistent/"+path+"/terminate", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	end := false
	for deadline := time.Now().Add(10 * time.Second); !end && time.Now().Before(deadline); {
		wsWrite(t, c, `{"type":"isEndOfTopic"}`)
		var e struct{ EndOfTopic bool }
		_ = json.Unmarshal(wsRead(t, c), &e)
		end = e.EndOfTopic
		if !end {
			time.Sleep(100 * time.Millisecond)
		}
	}
	note("isEndOfTopic after the termination: %v", end)
	return notes
}

// refusal tries an opening handshake and returns the status and the
// message of the error page (its title less "Error N "), with the Java
// client's request id and ports masked.
func refusal(ctx context.Context, t *testing.T, url, version string) (string, string) {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	h := http.Header{}
	if version != "13" {
		// gorilla always sends version 13: a raw request for another.
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http"+strings.TrimPrefix(url, "ws"), nil)
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Sec-WebSocket-Version", version)
		req.Header.Set("Sec-WebSocket-Key", "MDEyMzQ1Njc4OWFiY2RlZg==")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.Status, pageTitle(body)
	}
	c, resp, err := d.DialContext(ctx, url, h)
	if err == nil {
		c.Close()
		return "101", ""
	}
	if resp == nil {
		t.Fatalf("%s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.Status, pageTitle(body)
}

var (
	titleRE = regexp.MustCompile(`<title>Error \d+ (.*)</title>`)
	maskRE  = regexp.MustCompile(`&quot;reqId&quot;:\d+, &quot;remote&quot;:&quot;[^&]*&quot;, &quot;local&quot;:&quot;[^&]*&quot;`)
)

func pageTitle(body []byte) string {
	m := titleRE.FindSubmatch(body)
	if m == nil {
		return "(no title) " + string(body)
	}
	s := maskRE.ReplaceAllString(string(m[1]), "MASKED")
	if strings.HasPrefix(s, "Failed to create reader: ") {
		s = "Failed to create reader: ..." // the Java exception's text
	}
	return s
}

func maskPath(p, path string) string { return strings.ReplaceAll(p, path, "public/default/T") }

// maskFrame rewrites a JSON frame with its message id decoded (ledger
// masked) and its times checked for their form, keys in their order.
func maskFrame(frame []byte) string {
	s := string(frame)
	s = regexp.MustCompile(`"messageId":"([^"]*)"`).ReplaceAllStringFunc(s, func(m string) string {
		v := strings.TrimSuffix(strings.TrimPrefix(m, `"messageId":"`), `"`)
		return `"messageId":"` + describeID(v) + `"`
	})
	return regexp.MustCompile(`"publishTime":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,3})?Z"`).
		ReplaceAllString(s, `"publishTime":"TIME"`)
}

// describeID decodes a base64 MessageIdData into its fields, the ledger
// masked.
func describeID(v string) string {
	data, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return "not base64: " + v
	}
	var m pb.MessageIdData
	if err := proto.Unmarshal(data, &m); err != nil {
		return "not a message id: " + v
	}
	s := fmt.Sprintf("entry=%d", m.GetEntryId())
	if m.Partition != nil {
		s += fmt.Sprintf(" partition=%d", m.GetPartition())
	}
	if m.BatchIndex != nil {
		s += fmt.Sprintf(" batchIndex=%d", m.GetBatchIndex())
	}
	if m.BatchSize != nil {
		s += fmt.Sprintf(" batchSize=%d", m.GetBatchSize())
	}
	return s
}

func wsDial(ctx context.Context, t *testing.T, url string) *websocket.Conn {
	t.Helper()
	c, resp, err := websocket.DefaultDialer.DialContext(ctx, url, nil)
	if err != nil {
		status := ""
		if resp != nil {
			status = resp.Status
		}
		t.Fatalf("dial %s: %v %s", url, err, status)
	}
	t.Cleanup(func() { c.Close() })
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	return c
}

func wsRead(t *testing.T, c *websocket.Conn) []byte {
	t.Helper()
	_, m, err := c.ReadMessage()
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return m
}

func wsWrite(t *testing.T, c *websocket.Conn, frame string) {
	t.Helper()
	if err := c.WriteMessage(websocket.TextMessage, []byte(frame)); err != nil {
		t.Fatalf("write %s: %v", frame, err)
	}
}

// closeOf reads until the WebSocket ends (messages pushed meanwhile are
// skipped) and says how: the close frame's status and reason, or none.
func closeOf(c *websocket.Conn) string {
	for {
		_, _, err := c.ReadMessage()
		if err == nil {
			continue
		}
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			if ce.Code == websocket.CloseAbnormalClosure {
				return "closed without a close frame"
			}
			return fmt.Sprintf("close %d %q", ce.Code, ce.Text)
		}
		return "closed without a close frame"
	}
}
