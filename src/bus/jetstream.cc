#include "bus/jetstream.h"

#include <nats/nats.h>

#include <cctype>
#include <cstring>
#include <mutex>
#include <shared_mutex>

namespace dbs::bus {

namespace internal {

// Asynchronous publish failures since the last WaitPublished. libnats calls Record from its
// reply-dispatch thread; it counts a message as pending until the callback returns, so
// js_PublishAsyncComplete returning OK means no callback is running or will run for it.
struct AsyncPublishErrors {
  std::mutex mu;
  Status first;
  int64_t failed = 0;

  void Record(Status st) {
    std::lock_guard<std::mutex> lock(mu);
    if (failed++ == 0) first = std::move(st);
  }
  // The first failure (with the count) and a reset; OK when none.
  Status Take() {
    std::lock_guard<std::mutex> lock(mu);
    if (failed == 0) return Status::Ok();
    Status out = first;
    if (failed > 1) {
      out = out.WithContext(std::to_string(failed) + " asynchronous publishes failed, the first");
    }
    first = Status();
    failed = 0;
    return out;
  }
};

}  // namespace internal

namespace {

// Orders stream creation and deletion (exclusive) against requests that read a stream's store
// (shared): see NatsConnection::EnsureStream.
std::shared_mutex& StreamAdminMutex() {
  static std::shared_mutex mu;
  return mu;
}

Status FromNats(natsStatus s, std::string_view what, jsErrCode jerr = static_cast<jsErrCode>(0)) {
  if (s == NATS_OK) return Status::Ok();
  std::string msg(what);
  msg += ": ";
  msg += natsStatus_GetText(s);
  const char* last = nats_GetLastError(nullptr);
  if (last != nullptr && *last != '\0' && std::strstr(msg.c_str(), last) == nullptr) {
    msg += " (";
    msg += last;
    msg += ")";
  }
  if (jerr != 0) msg += " [jetstream error " + std::to_string(static_cast<int>(jerr)) + "]";
  // JetStream API errors arrive as NATS_ERR; their code says what happened.
  switch (jerr) {
    case JSStreamNotFoundErr:
    case JSConsumerNotFoundErr:
      return Status::NotFound(std::move(msg));
    case JSStreamMessageExceedsMaximumErr:
      return Status::ResourceExhausted(std::move(msg));
    case JSStreamWrongLastSequenceErr:  // an expected last (subject) sequence did not hold
      return Status(StatusCode::kFailedPrecondition, Retry::kRetry, std::move(msg));
    case JSClusterNoPeersErr:   // a cluster still forming, or a node down
    case JSClusterNotAvailErr:  // no meta leader (election under way)
    case JSClusterNotLeaderErr:
    case JSInsufficientResourcesErr:
      return Status(StatusCode::kUnavailable, Retry::kRetry, std::move(msg));
    default:
      break;
  }
  switch (s) {
    case NATS_TIMEOUT:
      return Status::Timeout(std::move(msg));
    case NATS_CONNECTION_CLOSED:
    case NATS_CONNECTION_DISCONNECTED:
    case NATS_NO_SERVER:
    case NATS_STALE_CONNECTION:
    case NATS_NO_RESPONDERS:
    case NATS_IO_ERROR:
      return Status::Unavailable(std::move(msg));
    case NATS_NOT_FOUND:
      return Status::NotFound(std::move(msg));
    case NATS_MAX_PAYLOAD:
      return Status::ResourceExhausted(std::move(msg));
    case NATS_NOT_PERMITTED:
      return Status::PermissionDenied(std::move(msg));
    case NATS_SSL_ERROR:
      return Status::Unavailable(std::move(msg)).WithRetry(Retry::kFail);
    default:
      return Status(StatusCode::kUnavailable, Retry::kFail, std::move(msg));
  }
}

void OnAsyncPublishError(jsCtx* /*js*/, jsPubAckErr* pae, void* closure) {
  auto* errors = static_cast<internal::AsyncPublishErrors*>(closure);
  std::string what = "publishing to ";
  const char* subject = pae->Msg != nullptr ? natsMsg_GetSubject(pae->Msg) : nullptr;
  what += subject != nullptr ? subject : "?";
  if (pae->ErrText != nullptr && *pae->ErrText != '\0') {
    what += " (";
    what += pae->ErrText;
    what += ")";
  }
  errors->Record(FromNats(pae->Err != NATS_OK ? pae->Err : NATS_ERR, what, pae->ErrCode));
}

// "nats://a:4222, nats://b:4222" -> {"nats://a:4222", "nats://b:4222"}.
std::vector<std::string> SplitUrls(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    size_t b = start;
    size_t e = end;
    while (b < e && std::isspace(static_cast<unsigned char>(list[b]))) ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(list[e - 1]))) --e;
    if (e > b) out.emplace_back(list.substr(b, e - b));
    start = end + 1;
  }
  return out;
}

struct OptionsDeleter {
  void operator()(natsOptions* o) const { natsOptions_Destroy(o); }
};

Status BuildMsg(std::string_view subject, std::string_view data,
                const std::vector<std::pair<std::string, std::string>>& headers, natsMsg** out) {
  std::string subj(subject);
  natsStatus s =
      natsMsg_Create(out, subj.c_str(), nullptr, data.data(), static_cast<int>(data.size()));
  for (const auto& [k, v] : headers) {
    if (s == NATS_OK) s = natsMsgHeader_Set(*out, k.c_str(), v.c_str());
  }
  if (s != NATS_OK && *out != nullptr) {
    natsMsg_Destroy(*out);
    *out = nullptr;
  }
  return FromNats(s, "building message for " + subj);
}

}  // namespace

// --- Message ---------------------------------------------------------------------------------

namespace {

// Delivery count and stream sequence from a JetStream ack subject:
// $JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<time>.<pending>, or
// the form with domain and account hash after ACK (11 or 12 tokens).
void AckSubjectMeta(std::string_view reply, uint64_t* delivered, uint64_t* stream_seq) {
  std::vector<std::string_view> t;
  size_t at = 0;
  while (at <= reply.size()) {
    const size_t dot = std::min(reply.find('.', at), reply.size());
    t.push_back(reply.substr(at, dot - at));
    at = dot + 1;
  }
  if (t.size() < 9 || t[0] != "$JS" || t[1] != "ACK") return;
  const size_t first = t.size() == 9 ? 4 : 6;
  if (first + 1 >= t.size()) return;
  auto number = [](std::string_view v) {
    uint64_t n = 0;
    for (char c : v) {
      if (c < '0' || c > '9') return uint64_t{0};
      n = n * 10 + static_cast<uint64_t>(c - '0');
    }
    return n;
  };
  *delivered = number(t[first]);
  *stream_seq = number(t[first + 1]);
}

}  // namespace

Message::Message(natsMsg* m, natsConnection* ack_conn) : msg_(m), ack_conn_(ack_conn) {
  if (ack_conn_ != nullptr) {
    const char* reply = natsMsg_GetReply(msg_);
    if (reply != nullptr) AckSubjectMeta(reply, &delivered_, &stream_seq_);
    return;
  }
  jsMsgMetaData* meta = nullptr;
  if (natsMsg_GetMetaData(&meta, msg_) == NATS_OK && meta != nullptr) {
    stream_seq_ = meta->Sequence.Stream;
    delivered_ = meta->NumDelivered;
    jsMsgMetaData_Destroy(meta);
  }
}

Message::~Message() { natsMsg_Destroy(msg_); }

std::string_view Message::subject() const { return natsMsg_GetSubject(msg_); }

std::string_view Message::data() const {
  return std::string_view(natsMsg_GetData(msg_), static_cast<size_t>(natsMsg_GetDataLength(msg_)));
}

std::string Message::header(const char* key) const {
  const char* v = nullptr;
  if (natsMsgHeader_Get(msg_, key, &v) != NATS_OK || v == nullptr) return {};
  return v;
}

Status Message::Reply(const char* body, const char* what) {
  const char* reply = natsMsg_GetReply(msg_);
  if (reply == nullptr || *reply == '\0') {
    return Status::FailedPrecondition(std::string(what) + ": not a JetStream message");
  }
  return FromNats(natsConnection_PublishString(ack_conn_, reply, body), what);
}

Status Message::Ack() {
  if (ack_conn_ != nullptr) return Reply("+ACK", "ack");
  return FromNats(natsMsg_Ack(msg_, nullptr), "ack");
}
Status Message::Nak() {
  if (ack_conn_ != nullptr) return Reply("-NAK", "nak");
  return FromNats(natsMsg_Nak(msg_, nullptr), "nak");
}
Status Message::InProgress() {
  if (ack_conn_ != nullptr) return Reply("+WPI", "in-progress");
  return FromNats(natsMsg_InProgress(msg_, nullptr), "in-progress");
}

// --- NatsConnection --------------------------------------------------------------------------

Result<std::unique_ptr<NatsConnection>> NatsConnection::Connect(const NatsOptions& o) {
  natsOptions* raw_opts = nullptr;
  DBS_RETURN_IF_ERROR(FromNats(natsOptions_Create(&raw_opts), "nats options"));
  std::unique_ptr<natsOptions, OptionsDeleter> opts(raw_opts);
  // natsOptions_SetURL takes one URL; a cluster's comma-separated list goes to SetServers.
  std::vector<std::string> urls = SplitUrls(o.url);
  if (urls.empty()) return Status::InvalidArgument("NATS URL is empty");
  std::vector<const char*> url_ptrs;
  for (const std::string& u : urls) url_ptrs.push_back(u.c_str());
  natsStatus s = urls.size() == 1 ? natsOptions_SetURL(opts.get(), url_ptrs[0])
                                  : natsOptions_SetServers(opts.get(), url_ptrs.data(),
                                                           static_cast<int>(url_ptrs.size()));
  if (s == NATS_OK) s = natsOptions_SetName(opts.get(), o.name.c_str());
  if (s == NATS_OK) s = natsOptions_SetTimeout(opts.get(), o.connect_timeout.count());
  if (s == NATS_OK) s = natsOptions_SetMaxReconnect(opts.get(), o.max_reconnects);
  if (s == NATS_OK) s = natsOptions_SetReconnectWait(opts.get(), 250);
  if (s == NATS_OK) s = natsOptions_SetRetryOnFailedConnect(opts.get(), false, nullptr, nullptr);
  if (s == NATS_OK && !o.user.empty()) {
    s = natsOptions_SetUserInfo(opts.get(), o.user.c_str(), o.password.c_str());
  }
  if (s == NATS_OK && !o.token.empty()) s = natsOptions_SetToken(opts.get(), o.token.c_str());
  if (s == NATS_OK && !o.creds_file.empty()) {
    s = natsOptions_SetUserCredentialsFromFiles(opts.get(), o.creds_file.c_str(), nullptr);
  }
  const bool tls = o.tls || !o.ca_file.empty() || !o.cert_file.empty();
  if (s == NATS_OK && tls) s = natsOptions_SetSecure(opts.get(), true);
  if (s == NATS_OK && !o.ca_file.empty()) {
    s = natsOptions_LoadCATrustedCertificates(opts.get(), o.ca_file.c_str());
  }
  if (s == NATS_OK && !o.cert_file.empty()) {
    s = natsOptions_LoadCertificatesChain(opts.get(), o.cert_file.c_str(), o.key_file.c_str());
  }
  DBS_RETURN_IF_ERROR(FromNats(s, "nats options"));

  std::unique_ptr<NatsConnection> c(new NatsConnection());
  c->request_timeout_ = o.request_timeout;
  s = natsConnection_Connect(&c->nc_, opts.get());
  if (s != NATS_OK) {
    return FromNats(s, "connecting to NATS at " + o.url +
                           " (is nats-server running with JetStream, and is NATS_URL right?)");
  }
  jsOptions jo;
  jsOptions_Init(&jo);
  jo.Wait = o.request_timeout.count();
  jo.PublishAsync.MaxPending = 4096;
  jo.PublishAsync.ErrHandler = OnAsyncPublishError;
  jo.PublishAsync.ErrHandlerClosure = c->async_errors_.get();
  DBS_RETURN_IF_ERROR(FromNats(natsConnection_JetStream(&c->js_, c->nc_, &jo), "jetstream"));
  return c;
}

NatsConnection::NatsConnection()
    : async_errors_(std::make_unique<internal::AsyncPublishErrors>()) {}

NatsConnection::~NatsConnection() {
  if (js_ != nullptr) {
    // The publish-error callback writes to async_errors_: make sure none runs after this.
    // Let in-flight async publishes finish (bounded), drop the rest (their late acks are then
    // ignored by libnats), and wait for a callback that may be running right now.
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = 1000;
    if (js_PublishAsyncComplete(js_, &po) != NATS_OK) {
      natsMsgList pending{};
      if (js_PublishAsyncGetPendingList(&pending, js_) == NATS_OK) natsMsgList_Destroy(&pending);
      js_PublishAsyncComplete(js_, &po);
    }
    jsCtx_Destroy(js_);
  }
  if (nc_ != nullptr) {
    natsConnection_Close(nc_);
    natsConnection_Destroy(nc_);
  }
}

int64_t NatsConnection::max_payload() const { return natsConnection_GetMaxPayload(nc_); }

bool NatsConnection::connected() const {
  return natsConnection_Status(nc_) == NATS_CONN_STATUS_CONNECTED;
}

Status NatsConnection::JetStreamReady() {
  jsAccountInfo* ai = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_GetAccountInfo(&ai, js_, nullptr, &jerr);
  if (ai != nullptr) jsAccountInfo_Destroy(ai);
  return FromNats(s, "JetStream account info (is JetStream enabled on the server?)", jerr);
}

Status NatsConnection::EnsureStream(const StreamSpec& spec) {
  std::unique_lock<std::shared_mutex> admin(StreamAdminMutex());
  jsStreamConfig cfg;
  jsStreamConfig_Init(&cfg);
  std::vector<const char*> subjects;
  for (const std::string& s : spec.subjects) subjects.push_back(s.c_str());
  cfg.Name = spec.name.c_str();
  cfg.Subjects = subjects.data();
  cfg.SubjectsLen = static_cast<int>(subjects.size());
  cfg.Storage = spec.file_storage ? js_FileStorage : js_MemoryStorage;
  cfg.Replicas = spec.replicas;
  cfg.Duplicates =
      std::chrono::duration_cast<std::chrono::nanoseconds>(spec.duplicate_window).count();
  cfg.MaxMsgSize = spec.max_msg_size;
  cfg.Retention = spec.work_queue ? js_WorkQueuePolicy : js_LimitsPolicy;
  cfg.AllowDirect = true;
  jsStreamInfo* si = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_AddStream(&si, js_, &cfg, nullptr, &jerr);
  if (s != NATS_OK && jerr == JSStreamNameExistErr) {
    jerr = static_cast<jsErrCode>(0);
    s = js_UpdateStream(&si, js_, &cfg, nullptr, &jerr);
  }
  if (si != nullptr) jsStreamInfo_Destroy(si);
  return FromNats(s, "creating JetStream stream " + spec.name, jerr);
}

Status NatsConnection::DeleteStream(const std::string& name) {
  std::unique_lock<std::shared_mutex> admin(StreamAdminMutex());
  jsErrCode jerr = static_cast<jsErrCode>(0);
  return FromNats(js_DeleteStream(js_, name.c_str(), nullptr, &jerr),
                  "deleting JetStream stream " + name, jerr);
}

Result<NatsConnection::StorageUsage> NatsConnection::Storage() {
  jsAccountInfo* ai = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  DBS_RETURN_IF_ERROR(
      FromNats(js_GetAccountInfo(&ai, js_, nullptr, &jerr), "JetStream account info", jerr));
  StorageUsage u{ai->Store, ai->Memory, ai->Streams};
  jsAccountInfo_Destroy(ai);
  return u;
}

Status NatsConnection::PurgeSubjectBelow(const std::string& stream, const std::string& subject,
                                         uint64_t below_seq) {
  std::shared_lock<std::shared_mutex> admin(StreamAdminMutex());
  jsOptions o;
  jsOptions_Init(&o);
  o.Stream.Purge.Subject = subject.c_str();
  o.Stream.Purge.Sequence = below_seq;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  return FromNats(js_PurgeStream(js_, stream.c_str(), &o, &jerr),
                  "purging " + subject + " of JetStream stream " + stream, jerr);
}

Result<PublishAck> NatsConnection::Publish(
    std::string_view subject, std::string_view data, std::string_view msg_id,
    const std::vector<std::pair<std::string, std::string>>& headers) {
  natsMsg* msg = nullptr;
  DBS_RETURN_IF_ERROR(BuildMsg(subject, data, headers, &msg));
  jsPubOptions po;
  jsPubOptions_Init(&po);
  std::string id(msg_id);
  if (!id.empty()) po.MsgId = id.c_str();
  po.MaxWait = request_timeout_.count();
  jsPubAck* pa = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_PublishMsg(&pa, js_, msg, &po, &jerr);
  natsMsg_Destroy(msg);
  if (s != NATS_OK) return FromNats(s, "publishing to " + std::string(subject), jerr);
  PublishAck ack{pa->Sequence, pa->Duplicate};
  jsPubAck_Destroy(pa);
  return ack;
}

Status NatsConnection::PublishAsync(
    std::string_view subject, std::string_view data, std::string_view msg_id,
    const std::vector<std::pair<std::string, std::string>>& headers) {
  natsMsg* msg = nullptr;
  DBS_RETURN_IF_ERROR(BuildMsg(subject, data, headers, &msg));
  jsPubOptions po;
  jsPubOptions_Init(&po);
  std::string id(msg_id);
  if (!id.empty()) po.MsgId = id.c_str();
  natsStatus s = js_PublishMsgAsync(js_, &msg, &po);
  async_used_.store(true);
  if (msg != nullptr) natsMsg_Destroy(msg);  // still ours when the call failed
  return FromNats(s, "publishing to " + std::string(subject));
}

Status NatsConnection::WaitPublished(std::chrono::milliseconds timeout) {
  // libnats 3.4 crashes in js_PublishAsyncGetPendingList when no async publish ever happened.
  if (!async_used_.load()) return Status::Ok();
  jsPubOptions po;
  jsPubOptions_Init(&po);
  po.MaxWait = timeout.count();
  DBS_RETURN_IF_ERROR(FromNats(js_PublishAsyncComplete(js_, &po), "waiting for publish acks"));
  natsMsgList pending{};
  if (js_PublishAsyncGetPendingList(&pending, js_) == NATS_OK) {
    int n = pending.Count;
    natsMsgList_Destroy(&pending);
    if (n > 0) {
      return Status::Unavailable(std::to_string(n) + " published messages were not acknowledged");
    }
  }
  return async_errors_->Take();
}

Result<std::string> NatsConnection::GetLastMessage(const std::string& stream,
                                                   const std::string& subject) {
  DBS_ASSIGN_OR_RETURN(StoredMessage m, GetLastStored(stream, subject));
  return std::move(m.data);
}

Result<NatsConnection::StoredMessage> NatsConnection::GetLastStored(const std::string& stream,
                                                                    const std::string& subject) {
  std::shared_lock<std::shared_mutex> admin(StreamAdminMutex());
  jsErrCode jerr = static_cast<jsErrCode>(0);
  bool direct = false;
  {
    jsStreamInfo* si = nullptr;
    natsStatus s = js_GetStreamInfo(&si, js_, stream.c_str(), nullptr, &jerr);
    std::unique_ptr<jsStreamInfo, void (*)(jsStreamInfo*)> info(si, jsStreamInfo_Destroy);
    if (s == NATS_NOT_FOUND || jerr == JSStreamNotFoundErr) {
      return Status::NotFound("no stream " + stream + " (no message on " + subject + ")");
    }
    if (s != NATS_OK) return FromNats(s, "reading the stream info of " + stream, jerr);
    // No message yet: nothing to get, and the store may still be being created.
    if (si->State.LastSeq == 0) return Status::NotFound("no message on " + subject);
    direct = si->Config != nullptr && si->Config->AllowDirect && si->Config->Replicas <= 1;
  }
  natsMsg* msg = nullptr;
  natsStatus s;
  if (direct) {
    jsDirectGetMsgOptions o;
    jsDirectGetMsgOptions_Init(&o);
    o.LastBySubject = subject.c_str();
    s = js_DirectGetMsg(&msg, js_, stream.c_str(), nullptr, &o);
  } else {
    s = js_GetLastMsg(&msg, js_, stream.c_str(), subject.c_str(), nullptr, &jerr);
  }
  if (s == NATS_NOT_FOUND || jerr == JSNoMessageFoundErr) {
    if (msg != nullptr) natsMsg_Destroy(msg);
    return Status::NotFound("no message on " + subject);
  }
  if (s != NATS_OK) return FromNats(s, "reading the last message on " + subject, jerr);
  StoredMessage m;
  m.data.assign(natsMsg_GetData(msg), static_cast<size_t>(natsMsg_GetDataLength(msg)));
  m.sequence = natsMsg_GetSequence(msg);
  natsMsg_Destroy(msg);
  return m;
}

Result<NatsConnection::ConsumerState> NatsConnection::GetConsumerState(const std::string& stream,
                                                                       const std::string& durable) {
  std::shared_lock<std::shared_mutex> admin(StreamAdminMutex());
  jsConsumerInfo* ci = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_GetConsumerInfo(&ci, js_, stream.c_str(), durable.c_str(), nullptr, &jerr);
  if (s != NATS_OK) return FromNats(s, "consumer info of " + durable, jerr);
  ConsumerState st{ci->NumPending, ci->NumAckPending, ci->NumRedelivered, ci->AckFloor.Stream};
  jsConsumerInfo_Destroy(ci);
  return st;
}

Status NatsConnection::PublishCore(std::string_view subject, std::string_view data) {
  std::string subj(subject);
  return FromNats(
      natsConnection_Publish(nc_, subj.c_str(), data.data(), static_cast<int>(data.size())),
      "publishing to " + subj);
}

Status NatsConnection::Flush(std::chrono::milliseconds timeout) {
  return FromNats(natsConnection_FlushTimeout(nc_, timeout.count()), "flush");
}

// --- Subscription ----------------------------------------------------------------------------

Result<std::unique_ptr<Subscription>> Subscription::Create(NatsConnection* conn,
                                                           const std::string& subject,
                                                           Handler handler) {
  std::unique_ptr<Subscription> s(new Subscription());
  s->handler_ = std::move(handler);
  DBS_RETURN_IF_ERROR(FromNats(natsConnection_Subscribe(&s->sub_, conn->raw(), subject.c_str(),
                                                        &Subscription::OnMessage, s.get()),
                               "subscribing to " + subject));
  return s;
}

void Subscription::OnMessage(natsConnection*, natsSubscription*, natsMsg* msg, void* closure) {
  auto* self = static_cast<Subscription*>(closure);
  self->handler_(
      natsMsg_GetSubject(msg),
      std::string_view(natsMsg_GetData(msg), static_cast<size_t>(natsMsg_GetDataLength(msg))));
  natsMsg_Destroy(msg);
}

Subscription::~Subscription() {
  if (sub_ != nullptr) {
    // Drain, then wait: no callback runs after this, so `handler_` outlives every call.
    if (natsSubscription_Drain(sub_) == NATS_OK) {
      natsSubscription_WaitForDrainCompletion(sub_, 2000);
    }
    natsSubscription_Destroy(sub_);
  }
}

// --- PullConsumer ----------------------------------------------------------------------------

Result<std::unique_ptr<PullConsumer>> PullConsumer::Create(NatsConnection* conn,
                                                           const ConsumerSpec& spec) {
  jsConsumerConfig cc;
  jsConsumerConfig_Init(&cc);
  cc.Durable = spec.durable.c_str();
  cc.AckPolicy = js_AckExplicit;
  cc.AckWait = std::chrono::duration_cast<std::chrono::nanoseconds>(spec.ack_wait).count();
  cc.MaxAckPending = spec.max_ack_pending;
  cc.MaxDeliver = spec.max_deliver;
  cc.DeliverPolicy = js_DeliverAll;
  if (!spec.filter_subject.empty()) cc.FilterSubject = spec.filter_subject.c_str();
  jsConsumerInfo* ci = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s;
  {
    std::shared_lock<std::shared_mutex> admin(StreamAdminMutex());
    s = js_AddConsumer(&ci, conn->js(), spec.stream.c_str(), &cc, nullptr, &jerr);
  }
  if (ci != nullptr) jsConsumerInfo_Destroy(ci);
  if (s != NATS_OK && jerr != JSConsumerNameExistErr && jerr != JSConsumerExistingActiveErr) {
    return FromNats(s, "creating durable consumer " + spec.durable + " on " + spec.stream, jerr);
  }

  std::unique_ptr<PullConsumer> pc(new PullConsumer());
  pc->nc_ = conn->raw();
  pc->next_subject_ = "$JS.API.CONSUMER.MSG.NEXT." + spec.stream + "." + spec.durable;
  pc->what_ = "durable consumer " + spec.durable + " of " + spec.stream;
  natsInbox* inbox = nullptr;
  DBS_RETURN_IF_ERROR(FromNats(natsInbox_Create(&inbox), "making an inbox"));
  pc->inbox_ = inbox;
  natsInbox_Destroy(inbox);
  s = natsConnection_SubscribeSync(&pc->sub_, pc->nc_, (pc->inbox_ + ".*").c_str());
  // A request asks for at most a batch: what arrives is bounded by the caller, not by libnats'
  // default pending limits (64 MB), which would drop messages of a large batch.
  if (s == NATS_OK) s = natsSubscription_SetPendingLimits(pc->sub_, -1, -1);
  if (s != NATS_OK) return FromNats(s, "subscribing for " + pc->what_);
  return pc;
}

PullConsumer::~PullConsumer() {
  // The durable stays on the server; deliveries not acknowledged are delivered again.
  if (sub_ != nullptr) {
    natsSubscription_Unsubscribe(sub_);
    natsSubscription_Destroy(sub_);
  }
}

Result<std::vector<std::unique_ptr<Message>>> PullConsumer::Fetch(
    int batch, std::chrono::milliseconds timeout) {
  std::vector<std::unique_ptr<Message>> out;
  if (batch <= 0) return out;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string reply;  // the current request's reply subject (none yet)
  // As libnats' simple fetch: the first request does not wait when more than one message is
  // wanted (the server sends what it has, then 404); only when that brought nothing does a
  // second request wait out the timeout.
  bool no_wait = true;
  // A Prefetch request is this fetch's first request, sent already.
  bool waited = false;
  if (!prefetch_reply_.empty()) {
    reply = std::move(prefetch_reply_);
    prefetch_reply_.clear();
    batch = prefetch_batch_;
    waited = true;
  }
  auto send = [&]() -> Status {
    const int64_t left = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             deadline - std::chrono::steady_clock::now())
                             .count();
    // The request expires a little before the caller's deadline, as libnats' does.
    const int64_t expires = left >= 20'000'000 ? left - 10'000'000 : left;
    const int64_t want = batch - static_cast<int64_t>(out.size());
    return Request(want, expires, no_wait && want > 1, &reply);
  };
  // First what is already here (an earlier request's last deliveries), then requests.
  while (static_cast<int>(out.size()) < batch) {
    int64_t wait_ms = 0;
    if (waited) {
      wait_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
      if (wait_ms <= 0) break;
    }
    natsMsg* raw = nullptr;
    natsStatus st = natsSubscription_NextMsg(&raw, sub_, wait_ms);
    if (st == NATS_TIMEOUT) {
      if (waited) break;
      waited = true;  // nothing pending: ask the server
      DBS_RETURN_IF_ERROR(send());
      continue;
    }
    if (st != NATS_OK) return FromNats(st, "fetching messages from " + what_);
    std::unique_ptr<Message> m = std::make_unique<Message>(raw, nc_);
    const std::string code = natsMsg_GetDataLength(raw) == 0 ? m->header("Status") : "";
    if (code.empty()) {
      out.push_back(std::move(m));
      continue;
    }
    // A status: 100 is a heartbeat; the others end a request, and only the current request's
    // end matters (an earlier one's 404 or 408 may arrive late).
    if (code == "100" || reply.empty() || m->subject() != reply) continue;
    if (code == "404" || code == "408") {
      if (code == "404" && no_wait && out.empty()) {
        no_wait = false;  // nothing was there: wait for the first message
        DBS_RETURN_IF_ERROR(send());
        continue;
      }
      break;
    }
    const std::string description = m->header("Description");
    if (code == "409" && description.find("Deleted") == std::string::npos) break;
    return Status::Unavailable(what_ + " answered " + code + " " + description);
  }
  return out;
}

Status PullConsumer::Prefetch(int batch) {
  if (batch <= 0 || !prefetch_reply_.empty()) return Status::Ok();
  DBS_RETURN_IF_ERROR(Request(batch, /*expires_ns=*/0, /*no_wait=*/true, &prefetch_reply_));
  prefetch_batch_ = batch;
  return Status::Ok();
}

Status PullConsumer::Request(int64_t want, int64_t expires_ns, bool no_wait, std::string* reply) {
  std::string body = "{\"batch\":" + std::to_string(want);
  if (expires_ns > 0) body += ",\"expires\":" + std::to_string(expires_ns);
  if (no_wait) body += ",\"no_wait\":true";
  body += "}";
  std::string subject = inbox_ + "." + std::to_string(++requests_);
  DBS_RETURN_IF_ERROR(
      FromNats(natsConnection_PublishRequest(nc_, next_subject_.c_str(), subject.c_str(),
                                             body.data(), static_cast<int>(body.size())),
               "asking " + what_ + " for messages"));
  *reply = std::move(subject);
  return Status::Ok();
}

}  // namespace dbs::bus
