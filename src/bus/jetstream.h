// JetStream access over libnats: connection, streams, publishing with de-duplication ids,
// and durable pull consumers.
//
// Contract:
//  - NatsConnection owns a libnats connection and its JetStream context; it is thread-safe
//    (libnats connections are), but a PullConsumer and a Message belong to one thread.
//  - Durable consumers are created explicitly (CreateOrBindConsumer) and are never deleted
//    when the local subscription closes: a restarted writer continues where it stopped.
//  - Errors map to Status: timeouts and lost connections are retryable; "stream not found",
//    bad subjects and payloads over max_payload are not.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"

// Opaque libnats types (nats.h is included only by the .cc).
typedef struct __natsConnection natsConnection;
typedef struct __jsCtx jsCtx;
typedef struct __natsSubscription natsSubscription;
typedef struct __natsMsg natsMsg;

namespace dbs::bus {

namespace internal {
struct AsyncPublishErrors;  // failures reported by libnats' publish-ack callback
}  // namespace internal

struct NatsOptions {
  std::string url = "nats://127.0.0.1:4222";  // comma-separated list for a cluster
  std::string name = "dbstreams";             // client name shown by the server
  std::string user;
  std::string password;
  std::string token;
  std::string creds_file;  // NATS .creds (JWT + nkey)
  bool tls = false;        // require TLS (implied by tls:// URLs or a CA/cert file)
  std::string ca_file;
  std::string cert_file;  // client certificate (mutual TLS)
  std::string key_file;
  std::chrono::milliseconds connect_timeout{5000};
  int max_reconnects = -1;                          // -1: forever
  std::chrono::milliseconds request_timeout{5000};  // JetStream API calls and publish acks
};

struct StreamSpec {
  std::string name;
  std::vector<std::string> subjects;
  int replicas = 1;
  bool file_storage = true;
  std::chrono::seconds duplicate_window{120};  // Nats-Msg-Id de-duplication window
  int32_t max_msg_size = -1;                   // -1: server default
  bool work_queue = false;                     // messages are removed once acknowledged
};

struct ConsumerSpec {
  std::string stream;
  std::string durable;
  std::string filter_subject;  // empty: every subject of the stream
  std::chrono::milliseconds ack_wait{30000};
  int64_t max_ack_pending = 1024;
  int64_t max_deliver = -1;
};

struct PublishAck {
  uint64_t sequence = 0;
  bool duplicate = false;  // the server already had a message with this id
};

// A received message. Ack after the data it carries is durably applied.
class Message {
 public:
  // `ack_conn`: the connection acks go out on, for a message PullConsumer fetched (its acks are
  // published to the message's reply subject); null for the others (libnats acks them).
  explicit Message(natsMsg* m, natsConnection* ack_conn = nullptr);
  ~Message();
  Message(const Message&) = delete;
  Message& operator=(const Message&) = delete;

  std::string_view subject() const;
  std::string_view data() const;
  // Header value, or empty when absent.
  std::string header(const char* key) const;
  // Stream sequence and delivery count (JetStream messages only; 0 otherwise).
  uint64_t stream_sequence() const { return stream_seq_; }
  uint64_t num_delivered() const { return delivered_; }

  Status Ack();
  Status Nak();
  Status InProgress();  // extends the ack deadline

 private:
  Status Reply(const char* body, const char* what);
  natsMsg* msg_;
  natsConnection* ack_conn_;
  uint64_t stream_seq_ = 0;
  uint64_t delivered_ = 0;
};

class NatsConnection {
 public:
  static Result<std::unique_ptr<NatsConnection>> Connect(const NatsOptions& options);
  ~NatsConnection();
  NatsConnection(const NatsConnection&) = delete;
  NatsConnection& operator=(const NatsConnection&) = delete;

  // The server's max_payload: no message may be larger.
  int64_t max_payload() const;
  bool connected() const;

  // OK once the server's JetStream answers for this account.
  Status JetStreamReady();

  // Creates the stream, or updates it when it exists with other settings. Streams allow
  // direct gets (see GetLastStored).
  //
  // nats-server 2.9 (Debian 12's) registers a stream before its store exists and clears the
  // store while deleting it: a message get, consumer or purge request for that stream in the
  // window dereferences a nil store and the server panics (jsMsgGetRequest), which takes every
  // run on that server down. So, within this process, stream creation and deletion exclude
  // every request that reads a stream's store (one process-wide lock). Other processes (a
  // writer waiting for the reader's plan while the reader creates the stream) are kept out of
  // the window by GetLastStored. Later nats-server releases register streams last.
  Status EnsureStream(const StreamSpec& spec);
  Status DeleteStream(const std::string& name);
  // JetStream storage of this account: bytes on disk (file storage) and in memory, streams.
  struct StorageUsage {
    uint64_t file_bytes = 0;
    uint64_t memory_bytes = 0;
    int64_t streams = 0;
  };
  Result<StorageUsage> Storage();
  // Removes the messages of `subject` (wildcards allowed) with a stream sequence below
  // `below_seq`; other subjects are untouched.
  Status PurgeSubjectBelow(const std::string& stream, const std::string& subject,
                           uint64_t below_seq);

  // Synchronous publish; `msg_id` (may be empty) is sent as Nats-Msg-Id for de-duplication.
  // With the header Nats-Expected-Last-Subject-Sequence, a subject whose last message has
  // another sequence (0: the subject has none) refuses the message: FailedPrecondition,
  // retryable.
  Result<PublishAck> Publish(std::string_view subject, std::string_view data,
                             std::string_view msg_id = {},
                             const std::vector<std::pair<std::string, std::string>>& headers = {});
  // Pipelined publish: returns once queued; WaitPublished() reports the first failure.
  // Failures are collected per connection: WaitPublished returns (and clears) the first failure
  // of any PublishAsync since the previous WaitPublished, with the number of failed messages.
  Status PublishAsync(std::string_view subject, std::string_view data, std::string_view msg_id = {},
                      const std::vector<std::pair<std::string, std::string>>& headers = {});
  Status WaitPublished(std::chrono::milliseconds timeout);

  // The newest message stored on `subject` in `stream`; NotFound when there is none.
  //
  // Safe while another process creates or deletes the stream (see EnsureStream): the stream's
  // info comes first, which the server answers from a store that may not exist yet; a stream
  // with no message has nothing to get (NotFound without asking for it). A stream with one
  // replica that allows direct gets is then read by a direct get, which only the stream's own
  // subscription answers, once its store exists and until it is stopped: a stream deleted
  // between the two requests times out (kTimeout, retryable) instead of crashing the server.
  // Other streams (replicated ones, where a direct get may come from a lagging follower) are
  // read with the leader's message get.
  Result<std::string> GetLastMessage(const std::string& stream, const std::string& subject);
  // The same with the message's stream sequence.
  struct StoredMessage {
    std::string data;
    uint64_t sequence = 0;
  };
  Result<StoredMessage> GetLastStored(const std::string& stream, const std::string& subject);

  struct ConsumerState {
    uint64_t num_pending = 0;     // not yet delivered
    int64_t num_ack_pending = 0;  // delivered, not yet acknowledged
    int64_t num_redelivered = 0;
    uint64_t ack_floor_stream_seq = 0;  // every message of the filter up to here is acknowledged
  };
  Result<ConsumerState> GetConsumerState(const std::string& stream, const std::string& durable);

  // Core NATS (not persisted): control messages, heartbeats, logs.
  Status PublishCore(std::string_view subject, std::string_view data);
  Status Flush(std::chrono::milliseconds timeout);

  natsConnection* raw() { return nc_; }
  jsCtx* js() { return js_; }

 private:
  NatsConnection();
  natsConnection* nc_ = nullptr;
  jsCtx* js_ = nullptr;
  std::chrono::milliseconds request_timeout_{5000};
  // Written from libnats' callback thread; outlives js_ (see the destructor).
  std::unique_ptr<internal::AsyncPublishErrors> async_errors_;
  std::atomic<bool> async_used_{false};  // any PublishAsync yet (see WaitPublished)
};

// A core NATS subscription delivering to a callback on libnats' thread; unsubscribes when
// destroyed. The callback must be thread-safe with respect to the owner's other threads.
class Subscription {
 public:
  using Handler = std::function<void(std::string_view subject, std::string_view data)>;
  static Result<std::unique_ptr<Subscription>> Create(NatsConnection* conn,
                                                      const std::string& subject, Handler handler);
  ~Subscription();
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;

 private:
  Subscription() = default;
  static void OnMessage(natsConnection* nc, natsSubscription* sub, natsMsg* msg, void* closure);
  natsSubscription* sub_ = nullptr;
  Handler handler_;
};

// A pull consumer of a durable JetStream consumer.
//
// Pulls are made here, not by libnats' natsSubscription_Fetch: libnats 3.4.1 (Debian 12's)
// writes past the end of its message array when a fetch starts with more than half a batch
// already pending (fixed upstream in nats.c 3.9, "heap buffer overflow in _fetch"), which
// corrupted writers' heaps with small bundles. Fetch publishes a pull request
// ($JS.API.CONSUMER.MSG.NEXT) whose replies come to a private inbox (one subject per request),
// and collects the deliveries: messages that arrive after a fetch returned (an expired
// request's last ones) are delivered, unacknowledged, by the next fetch.
class PullConsumer {
 public:
  // Creates the durable consumer if missing (or verifies it) and subscribes its inbox.
  static Result<std::unique_ptr<PullConsumer>> Create(NatsConnection* conn,
                                                      const ConsumerSpec& spec);
  ~PullConsumer();
  PullConsumer(const PullConsumer&) = delete;
  PullConsumer& operator=(const PullConsumer&) = delete;

  // Up to `batch` messages; an empty vector when none arrived within `timeout`. Used from one
  // thread at a time.
  Result<std::vector<std::unique_ptr<Message>>> Fetch(int batch, std::chrono::milliseconds timeout);
  // Asks the server now for up to `batch` messages that are already there (no wait), so that
  // they travel while the caller works; the next Fetch takes them, whatever batch it names.
  // At most one such request is outstanding. The messages' ack wait starts when they arrive.
  Status Prefetch(int batch);

 private:
  PullConsumer() = default;
  // Sends one pull request for `want` messages (expiring after expires_ns when > 0); *reply
  // becomes its reply subject, on which the server's status for it arrives.
  Status Request(int64_t want, int64_t expires_ns, bool no_wait, std::string* reply);
  natsConnection* nc_ = nullptr;
  natsSubscription* sub_ = nullptr;  // synchronous, on inbox_ + ".*"
  std::string inbox_;
  std::string next_subject_;    // $JS.API.CONSUMER.MSG.NEXT.<stream>.<durable>
  std::string what_;            // "durable consumer <durable> of <stream>", for errors
  uint64_t requests_ = 0;       // the last request's number, its reply subject's last token
  std::string prefetch_reply_;  // the outstanding Prefetch request's reply subject; empty: none
  int prefetch_batch_ = 0;      // and the messages it asked for
};

}  // namespace dbs::bus
