#pragma once
// A private network that a test can split: Linux network namespaces ("sites"), each joined to one bridge
// in the test's own namespace by a veth pair, each with one address in a /24 of its own. A process started
// in a site (inside()) reaches every other site through the bridge, and so do the test's threads; a thread
// that enters a site (Site::Inside) speaks from there. cut() takes a site's link down, so that nothing
// leaves or reaches it while its own processes still reach each other, as a master cut off with the
// clients beside it is; heal() brings it back. Connections stay open across a cut, as across a real one.
//
// Needs root (or CAP_NET_ADMIN) and `ip` (iproute2); whyUnavailable() says what is missing, so that a test
// can skip with a reason. Everything made is removed by the destructor: the namespaces (their veth pairs
// go with them) and the bridge.

#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace swl::test {

class PartitionNetwork {
 public:
  explicit PartitionNetwork(int sites) {
    // Names and a /24 of this network's own: two tests running at once never share a route, and a network
    // made after another in the same process never meets the veth ends the kernel is still removing.
    static int networks = 0;
    const long pid = static_cast<long>(::getpid());
    const int made = networks++;
    id_ = base36(pid * 64 + made % 64);
    prefix_ = "10." + std::to_string(100 + pid % 100) + "." + std::to_string((pid / 100 + 37 * made) % 250) + ".";
    bridge_ = "swl" + id_ + "b";
    try {
      ip("link add " + bridge_ + " type bridge");
      ip("addr add " + prefix_ + "254/24 dev " + bridge_);
      ip("link set " + bridge_ + " up");
      for (int site = 0; site < sites; ++site) addSite(site);
    } catch (...) {
      removeAll();
      throw;
    }
  }
  ~PartitionNetwork() { removeAll(); }
  PartitionNetwork(const PartitionNetwork&) = delete;
  PartitionNetwork& operator=(const PartitionNetwork&) = delete;

  // Empty when namespaces, veth pairs and bridges can be made here; otherwise why not.
  static std::string whyUnavailable() {
    if (::geteuid() != 0) return "network namespaces need root";
    if (!quietly("ip -V")) return "`ip` (iproute2) is not installed";
    const std::string probe = "swlprobe" + std::to_string(::getpid() % 1'000'000);
    if (!quietly("ip netns add " + probe))
      return "`ip netns add` fails here (no network namespaces in this container?)";
    quietly("ip netns del " + probe);
    return {};
  }

  int sites() const { return static_cast<int>(sites_.size()); }
  const std::string& address(int site) const { return sites_.at(site).address; }

  // Nothing leaves or reaches the site until heal(); its own processes still reach each other.
  void cut(int site) { ip("link set " + sites_.at(site).outside + " down"); }
  void heal(int site) { ip("link set " + sites_.at(site).outside + " up"); }

  // `command` as a process inside the site (for ChildProcess::start).
  std::vector<std::string> inside(int site, std::vector<std::string> command) const {
    command.insert(command.begin(), {"ip", "netns", "exec", sites_.at(site).name});
    return command;
  }

  // While it lives, the calling thread speaks from inside `site`: sockets it opens are the site's.
  class Inside {
   public:
    Inside(const PartitionNetwork& network, int site) : own_(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)) {
      const int target = ::open(("/var/run/netns/" + network.sites_.at(site).name).c_str(), O_RDONLY | O_CLOEXEC);
      const bool entered = own_ >= 0 && target >= 0 && ::setns(target, CLONE_NEWNET) == 0;
      if (target >= 0) ::close(target);
      if (!entered) {
        if (own_ >= 0) ::close(own_);
        throw std::runtime_error("cannot enter the network namespace of site " + std::to_string(site));
      }
    }
    ~Inside() {
      ::setns(own_, CLONE_NEWNET);
      ::close(own_);
    }
    Inside(const Inside&) = delete;
    Inside& operator=(const Inside&) = delete;

   private:
    int own_;
  };

 private:
  struct Site {
    std::string name;     // the namespace
    std::string outside;  // the veth end on the bridge
    std::string address;
  };

  static std::string base36(long number) {
    std::string digits;
    do {
      digits.insert(digits.begin(), "0123456789abcdefghijklmnopqrstuvwxyz"[number % 36]);
      number /= 36;
    } while (number > 0);
    return digits;
  }

  // Runs a shell command with its output discarded; true when it succeeded.
  static bool quietly(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()) == 0; }

  static void ip(const std::string& arguments) {
    if (!quietly("ip " + arguments)) throw std::runtime_error("failed: ip " + arguments);
  }

  void addSite(int index) {
    Site site{"swl-" + id_ + "-" + std::to_string(index), "swl" + id_ + "v" + std::to_string(index),
              prefix_ + std::to_string(index + 1)};
    const std::string in = "swl" + id_ + "i" + std::to_string(index);
    ip("netns add " + site.name);
    sites_.push_back(site);
    ip("link add " + site.outside + " type veth peer name " + in);
    ip("link set " + in + " netns " + site.name);
    ip("link set " + site.outside + " master " + bridge_);
    ip("link set " + site.outside + " up");
    ip("-n " + site.name + " addr add " + site.address + "/24 dev " + in);
    ip("-n " + site.name + " link set " + in + " up");
    ip("-n " + site.name + " link set lo up");
  }

  void removeAll() {
    for (const Site& site : sites_) quietly("ip netns del " + site.name);
    sites_.clear();
    quietly("ip link del " + bridge_);
  }

  std::string id_;
  std::string prefix_;
  std::string bridge_;
  std::vector<Site> sites_;
};

}  // namespace swl::test
