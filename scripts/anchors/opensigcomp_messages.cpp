// The SigComp messages Open SigComp's own Deflate compressor sends, and the time its decompressor takes on them.
//
// sigkit's code. It is built against Open SigComp's library (reSIProcate's contrib/opensigcomp, GPL-2.0) on the
// bench machine only, by scripts/bench-osc-decompress.sh; nothing of Open SigComp is in this repository.
//
// Usage:
//   opensigcomp_messages generate FLOW_DIR OUT_DIR [--repeat R] [--compartment-every N] [--sip-dict]
//     Reads FLOW_DIR's SIP messages (corpus/README.md's format: NN-<sender>-<name>.sip, sender ue or pcscf),
//     R times in order (default once), and sends each as Open SigComp's speed test (its src/test/speed_test.cpp)
//     sends its messages: two stacks, the UE's and the P-CSCF's, each a StateHandler(8192, 64, 8192, 2) (SMS 8192,
//     CPB 64, DMS 8192, SigComp version 2) with a DeflateCompressor; the sender's stack compresses the message,
//     the receiver's stack decompresses it at once and accepts it under the same compartment, so that feedback
//     and states flow between them as in the speed test. Messages are in compartment 1, or a new compartment every
//     N messages (--compartment-every). No SIP dictionary unless --sip-dict (the speed test uses none).
//     Writes (creating OUT_DIR if need be) OUT_DIR/NNNN-<sender>.sigcomp (the SigComp message as sent on UDP),
//     OUT_DIR/NNNN-<sender>.sip (the SIP message it carries), and OUT_DIR/messages.tsv: a "# opensigcomp-messages
//     dms=8192 sms=8192 cpb=64 version=2 sip_dictionary=yes|no" line, then one row per message: index, sender,
//     compartment, SigComp file, SIP file. Checks that the receiver's output is the message sent.
//   opensigcomp_messages time OUT_DIR K
//     Decompresses OUT_DIR's messages as the receiving stacks did: one untimed pass that checks every output
//     against its .sip file, then K timed passes, each with fresh receiving stacks (one per direction, configured
//     as above), so that every pass rebuilds the states exactly as the first did. Each message is decompressed
//     (Stack::uncompressMessage) and accepted under its compartment (Stack::provideCompartmentId); only those
//     calls are timed, not the stacks' creation. Also the thread's CPU time over the K passes (creation
//     included: /proc/thread-self/schedstat, immune to other processes taking the CPU). Prints one line:
//       opensigcomp messages=M passes=K seconds=S messages_per_s=R cpu_seconds=C messages_per_cpu_s=Q
// Exit codes: 0 done; 1 a message failed to compress or decompress, or an output differs; 2 bad usage or input.
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "DeflateCompressor.h"
#include "SigcompMessage.h"
#include "Stack.h"
#include "StateChanges.h"
#include "StateHandler.h"

namespace {

// The speed test's parameters (StateHandler(8192, 64, 8192, 2)).
const size_t kSms = 8192;
const size_t kCpb = 64;
const size_t kDms = 8192;
const osc::u16 kVersion = 2;

typedef std::vector<unsigned char> Bytes;

struct Failure {
  int code;
  std::string what;
  Failure(int c, const std::string &w) : code(c), what(w) {}
};

Bytes readFile(const std::string &path) {
  std::ifstream in(path.c_str(), std::ios::binary);
  if (!in) throw Failure(2, "cannot read " + path);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void writeFile(const std::string &path, const unsigned char *bytes, size_t len) {
  std::ofstream out(path.c_str(), std::ios::binary);
  out.write(reinterpret_cast<const char *>(bytes), len);
  if (!out) throw Failure(2, "cannot write " + path);
}

std::string numbered(size_t index, const std::string &sender, const char *ext) {
  char name[64];
  snprintf(name, sizeof(name), "%04u-%s.%s", static_cast<unsigned>(index), sender.c_str(), ext);
  return name;
}

// One endpoint configured as the speed test configures Alice and Bob.
struct Endpoint {
  osc::StateHandler *handler;
  osc::Stack *stack;
  explicit Endpoint(bool sipDictionary) {
    handler = new osc::StateHandler(kSms, kCpb, kDms, kVersion);
    if (sipDictionary) handler->useSipDictionary();
    stack = new osc::Stack(*handler);
    stack->addCompressor(new osc::DeflateCompressor(*handler));
  }
  ~Endpoint() {
    delete stack;
    delete handler;
  }

 private:
  Endpoint(const Endpoint &);
  Endpoint &operator=(const Endpoint &);
};

// The sender of a corpus file name NN-<sender>-<name>.sip, or "" if it is not one.
std::string senderOf(const std::string &name) {
  if (name.size() < 4 || name.compare(name.size() - 4, 4, ".sip") != 0) return "";
  size_t first = name.find('-');
  if (first == std::string::npos) return "";
  size_t second = name.find('-', first + 1);
  std::string sender = name.substr(first + 1, second == std::string::npos ? std::string::npos : second - first - 1);
  return sender == "ue" || sender == "pcscf" ? sender : "";
}

struct FlowMessage {
  std::string sender;
  Bytes sip;
};

std::vector<FlowMessage> readFlow(const std::string &dir) {
  DIR *d = opendir(dir.c_str());
  if (!d) throw Failure(2, "cannot open flow directory " + dir);
  std::vector<std::string> names;
  while (struct dirent *e = readdir(d)) {
    std::string name = e->d_name;
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".sip") == 0) names.push_back(name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  std::vector<FlowMessage> flow;
  for (size_t i = 0; i < names.size(); i++) {
    FlowMessage m;
    m.sender = senderOf(names[i]);
    if (m.sender.empty()) throw Failure(2, "not NN-ue-NAME.sip or NN-pcscf-NAME.sip: " + names[i]);
    m.sip = readFile(dir + "/" + names[i]);
    flow.push_back(m);
  }
  if (flow.empty()) throw Failure(2, "no .sip files in " + dir);
  return flow;
}

unsigned long positive(const char *text, const char *what) {
  char *end = 0;
  errno = 0;
  unsigned long v = strtoul(text, &end, 10);
  if (errno || !end || *end || v == 0 || text[0] == '-') throw Failure(2, std::string(what) + " must be a positive integer");
  return v;
}

int generate(int argc, char **argv) {
  if (argc < 4) throw Failure(2, "usage: generate FLOW_DIR OUT_DIR [--repeat R] [--compartment-every N] [--sip-dict]");
  std::string flowDir = argv[2], outDir = argv[3];
  unsigned long repeat = 1, every = 0;
  bool sipDictionary = false;
  for (int i = 4; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--repeat" && i + 1 < argc) repeat = positive(argv[++i], "--repeat");
    else if (a == "--compartment-every" && i + 1 < argc) every = positive(argv[++i], "--compartment-every");
    else if (a == "--sip-dict") sipDictionary = true;
    else throw Failure(2, "unknown argument " + a);
  }
  std::vector<FlowMessage> flow = readFlow(flowDir);
  if (mkdir(outDir.c_str(), 0777) != 0 && errno != EEXIST) throw Failure(2, "cannot create " + outDir);
  Endpoint ue(sipDictionary), pcscf(sipDictionary);

  std::ostringstream manifest;
  manifest << "# opensigcomp-messages dms=" << kDms << " sms=" << kSms << " cpb=" << kCpb << " version=" << kVersion
           << " sip_dictionary=" << (sipDictionary ? "yes" : "no") << "\n";
  std::vector<unsigned char> output(65536);
  size_t index = 0, sipBytes = 0, sigcompBytes = 0;
  for (unsigned long r = 0; r < repeat; r++) {
    for (size_t i = 0; i < flow.size(); i++, index++) {
      const FlowMessage &m = flow[i];
      int compartment = 1 + static_cast<int>(every ? index / every : 0);
      Endpoint &sender = m.sender == "ue" ? ue : pcscf;
      Endpoint &receiver = m.sender == "ue" ? pcscf : ue;
      osc::SigcompMessage *sm = sender.stack->compressMessage(&m.sip[0], m.sip.size(), compartment);
      if (!sm) throw Failure(1, "Open SigComp compressed nothing for message " + numbered(index + 1, m.sender, "sip"));
      osc::StateChanges *sc = 0;
      size_t n = receiver.stack->uncompressMessage(sm->getDatagramMessage(), sm->getDatagramLength(), &output[0],
                                                   output.size(), sc);
      if (n != m.sip.size() || !std::equal(m.sip.begin(), m.sip.end(), output.begin()))
        throw Failure(1, "Open SigComp's receiver did not give back message " + numbered(index + 1, m.sender, "sip"));
      // The receiving stack's UDVM owns sc (Udvm::getProposedStates keeps it and frees it on the next message).
      receiver.stack->provideCompartmentId(sc, compartment);
      std::string sigcompName = numbered(index + 1, m.sender, "sigcomp"), sipName = numbered(index + 1, m.sender, "sip");
      writeFile(outDir + "/" + sigcompName, sm->getDatagramMessage(), sm->getDatagramLength());
      writeFile(outDir + "/" + sipName, &m.sip[0], m.sip.size());
      manifest << index + 1 << "\t" << m.sender << "\t" << compartment << "\t" << sigcompName << "\t" << sipName
               << "\n";
      sipBytes += m.sip.size();
      sigcompBytes += sm->getDatagramLength();
      delete sm;
    }
  }
  std::string text = manifest.str();
  writeFile(outDir + "/messages.tsv", reinterpret_cast<const unsigned char *>(text.data()), text.size());
  std::cout << "opensigcomp-generate messages=" << index << " sip_bytes=" << sipBytes
            << " sigcomp_bytes=" << sigcompBytes << std::endl;
  return 0;
}

struct DirMessage {
  std::string sender;
  int compartment;
  Bytes sigcomp;
  Bytes sip;  // empty when the directory gives none
  std::string name;
};

std::vector<DirMessage> readDir(const std::string &dir, bool &sipDictionary) {
  std::ifstream in((dir + "/messages.tsv").c_str());
  if (!in) throw Failure(2, "cannot read " + dir + "/messages.tsv");
  std::vector<DirMessage> messages;
  std::string line;
  sipDictionary = false;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line[0] == '#') {
      if (line.find("sip_dictionary=yes") != std::string::npos) sipDictionary = true;
      continue;
    }
    std::istringstream row(line);
    std::string index, compartment, sigcompName, sipName;
    DirMessage m;
    if (!std::getline(row, index, '\t') || !std::getline(row, m.sender, '\t') ||
        !std::getline(row, compartment, '\t') || !std::getline(row, sigcompName, '\t'))
      throw Failure(2, "bad row in messages.tsv: " + line);
    std::getline(row, sipName, '\t');
    if (m.sender != "ue" && m.sender != "pcscf") throw Failure(2, "bad sender in messages.tsv: " + line);
    m.compartment = static_cast<int>(positive(compartment.c_str(), "compartment"));
    m.sigcomp = readFile(dir + "/" + sigcompName);
    if (!sipName.empty()) m.sip = readFile(dir + "/" + sipName);
    m.name = sigcompName;
    messages.push_back(m);
  }
  if (messages.empty()) throw Failure(2, "no messages in " + dir + "/messages.tsv");
  return messages;
}

double now() {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

// The time this thread has spent on a CPU, in seconds: the first field of /proc/thread-self/schedstat, which
// crates/sigcomp/examples/decompress_dir.rs reads too, so that both programs' CPU times come from the same clock.
double cpuSeconds() {
  std::ifstream in("/proc/thread-self/schedstat");
  unsigned long long ns = 0;
  if (!(in >> ns)) throw Failure(2, "cannot read /proc/thread-self/schedstat");
  return ns * 1e-9;
}

// Decompresses every message with fresh receiving stacks; returns the seconds the decompressing and accepting took.
double pass(const std::vector<DirMessage> &messages, bool sipDictionary, bool check, std::vector<unsigned char> &out) {
  Endpoint ueReceiver(sipDictionary), pcscfReceiver(sipDictionary);
  double t0 = now();
  for (size_t i = 0; i < messages.size(); i++) {
    const DirMessage &m = messages[i];
    // A message the UE sent is received by the P-CSCF, and the other way round.
    osc::Stack &stack = m.sender == "ue" ? *pcscfReceiver.stack : *ueReceiver.stack;
    osc::StateChanges *sc = 0;
    size_t n = stack.uncompressMessage(&m.sigcomp[0], m.sigcomp.size(), &out[0], out.size(), sc);
    if (n == 0) throw Failure(1, "Open SigComp failed to decompress " + m.name);
    if (check && !m.sip.empty() && (n != m.sip.size() || !std::equal(m.sip.begin(), m.sip.end(), out.begin())))
      throw Failure(1, "Open SigComp's output differs from the SIP message of " + m.name);
    stack.provideCompartmentId(sc, m.compartment);
  }
  return now() - t0;
}

int timeDir(int argc, char **argv) {
  if (argc != 4) throw Failure(2, "usage: time OUT_DIR K");
  bool sipDictionary = false;
  std::vector<DirMessage> messages = readDir(argv[2], sipDictionary);
  unsigned long passes = positive(argv[3], "K");
  std::vector<unsigned char> out(65536);
  pass(messages, sipDictionary, true, out);
  double seconds = 0;
  double cpu0 = cpuSeconds();
  for (unsigned long k = 0; k < passes; k++) seconds += pass(messages, sipDictionary, false, out);
  double cpu = cpuSeconds() - cpu0;
  double total = static_cast<double>(messages.size()) * passes;
  std::cout << "opensigcomp messages=" << messages.size() << " passes=" << passes << " seconds=" << seconds
            << " messages_per_s=" << total / seconds << " cpu_seconds=" << cpu
            << " messages_per_cpu_s=" << total / cpu << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  try {
    std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "generate") return generate(argc, argv);
    if (mode == "time") return timeDir(argc, argv);
    throw Failure(2, "usage: opensigcomp_messages generate FLOW_DIR OUT_DIR [--repeat R] [--compartment-every N] "
                     "[--sip-dict] | time OUT_DIR K");
  } catch (const Failure &f) {
    std::cerr << "opensigcomp_messages: " << f.what << std::endl;
    return f.code;
  }
}
