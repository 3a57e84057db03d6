// The deployment files say what the daemon needs: hostPID / a shared process namespace, the
// socket on a shared volume at the path the client is told, the metrics port scraped, the
// privileges that reading /proc and writing clear_refs need (and no more), SIGHUP on reload.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

const std::filesystem::path kDeploy = std::filesystem::path(RAMGUARD_SOURCE_DIR) / "deploy";

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<YAML::Node> documents(const std::string& file) {
  return YAML::LoadAllFromFile((kDeploy / "kubernetes" / file).string());
}

YAML::Node find_kind(const std::vector<YAML::Node>& docs, const std::string& kind) {
  for (const auto& doc : docs) {
    if (doc["kind"] && doc["kind"].as<std::string>() == kind) return doc;
  }
  ADD_FAILURE() << "no " << kind;
  return YAML::Node();
}

YAML::Node container_named(const YAML::Node& list, const std::string& name) {
  for (const auto& c : list) {
    if (c["name"].as<std::string>() == name) return c;
  }
  ADD_FAILURE() << "no container " << name;
  return YAML::Node();
}

std::vector<std::string> strings(const YAML::Node& seq) {
  std::vector<std::string> out;
  if (seq && seq.IsSequence()) {
    for (const auto& s : seq) out.push_back(s.as<std::string>());
  }
  return out;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// The value after `flag` in args ("" when absent).
std::string arg_value_in(const std::vector<std::string>& args, const std::string& flag) {
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == flag) return args[i + 1];
  }
  return "";
}

std::string arg_value(const YAML::Node& container, const std::string& flag) {
  return arg_value_in(strings(container["args"]), flag);
}

int metrics_port(const YAML::Node& container) {
  for (const auto& p : container["ports"]) {
    if (p["name"].as<std::string>() == "metrics") return p["containerPort"].as<int>();
  }
  ADD_FAILURE() << "no metrics port";
  return -1;
}

std::string mount_path(const YAML::Node& container, const std::string& volume) {
  for (const auto& m : container["volumeMounts"]) {
    if (m["name"].as<std::string>() == volume) return m["mountPath"].as<std::string>();
  }
  return "";
}

TEST(DaemonSet, SeesHostProcessesWithOnlyTheCapabilitiesItNeeds) {
  const auto docs = documents("daemonset.yaml");
  const auto ds = find_kind(docs, "DaemonSet");
  const auto pod = ds["spec"]["template"]["spec"];
  EXPECT_TRUE(pod["hostPID"].as<bool>());
  const auto c = container_named(pod["containers"], "ramguardd");
  const auto caps = c["securityContext"]["capabilities"];
  EXPECT_EQ(strings(caps["drop"]), std::vector<std::string>{"ALL"});
  const auto added = strings(caps["add"]);
  EXPECT_TRUE(contains(added, "SYS_PTRACE"));
  EXPECT_TRUE(contains(added, "DAC_OVERRIDE"));
  EXPECT_FALSE(contains(added, "KILL"));  // guard, never kill
  EXPECT_FALSE(c["securityContext"]["privileged"] && c["securityContext"]["privileged"].as<bool>());
  EXPECT_FALSE(c["securityContext"]["allowPrivilegeEscalation"].as<bool>());
  EXPECT_EQ(ds["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"].as<std::string>(),
            "ramguard");
}

TEST(DaemonSet, ConfigMapListensWhereThePodExposesMetricsAndPutsTheSocketOnTheHostPath) {
  const auto docs = documents("daemonset.yaml");
  const auto config =
      YAML::Load(find_kind(docs, "ConfigMap")["data"]["ramguard.yaml"].as<std::string>());
  const auto pod = find_kind(docs, "DaemonSet")["spec"]["template"]["spec"];
  const auto c = container_named(pod["containers"], "ramguardd");
  const std::string listen = config["metrics"]["listen"].as<std::string>();
  EXPECT_EQ(listen.substr(0, listen.rfind(':')), "0.0.0.0");  // the pod IP, not loopback
  EXPECT_EQ(std::stoi(listen.substr(listen.rfind(':') + 1)), metrics_port(c));
  const std::string socket = config["control"]["socket"].as<std::string>();
  const std::string socket_dir = mount_path(c, "socket");
  ASSERT_FALSE(socket_dir.empty());
  EXPECT_EQ(std::filesystem::path(socket).parent_path(), socket_dir);
  for (const auto& v : pod["volumes"]) {
    if (v["name"].as<std::string>() == "socket") {
      EXPECT_EQ(v["hostPath"]["path"].as<std::string>(), socket_dir);
    }
  }
  EXPECT_EQ(config["state_dir"].as<std::string>(), mount_path(c, "state"));
  EXPECT_EQ(mount_path(c, "config") + "/ramguard.yaml", arg_value(c, "--config"));
}

TEST(Sidecar, SharesTheProcessNamespaceAndTheSocketVolume) {
  const auto job = find_kind(documents("sidecar-job.yaml"), "Job");
  const auto pod = job["spec"]["template"]["spec"];
  EXPECT_TRUE(pod["shareProcessNamespace"].as<bool>());
  const auto guard = container_named(pod["initContainers"], "ramguard");
  EXPECT_EQ(guard["restartPolicy"].as<std::string>(), "Always");  // a native sidecar
  const auto coordinator = container_named(pod["containers"], "coordinator");
  const std::string guard_dir = mount_path(guard, "ramguard-socket");
  ASSERT_FALSE(guard_dir.empty());
  EXPECT_EQ(mount_path(coordinator, "ramguard-socket"), guard_dir);
  bool empty_dir = false;
  for (const auto& v : pod["volumes"]) {
    if (v["name"].as<std::string>() == "ramguard-socket") empty_dir = bool(v["emptyDir"]);
  }
  EXPECT_TRUE(empty_dir);
  const std::string socket = arg_value(guard, "--socket");
  EXPECT_EQ(std::filesystem::path(socket).parent_path(), guard_dir);
  std::string env_socket;
  for (const auto& e : coordinator["env"]) {
    if (e["name"].as<std::string>() == "RAMGUARD_SOCKET") env_socket = e["value"].as<std::string>();
  }
  EXPECT_EQ(env_socket, socket);
  const std::string metrics = arg_value(guard, "--metrics");
  EXPECT_EQ(std::stoi(metrics.substr(metrics.rfind(':') + 1)), metrics_port(guard));
  // Same user as the coordinator: no capability needed to read its /proc or reset its peak.
  EXPECT_EQ(strings(guard["securityContext"]["capabilities"]["drop"]),
            std::vector<std::string>{"ALL"});
  EXPECT_FALSE(guard["securityContext"]["capabilities"]["add"]);
  EXPECT_TRUE(pod["securityContext"]["runAsUser"]);
}

TEST(DaemonSet, NamespaceAdmitsItsPrivilegesThroughPodSecurityLabels) {
  const auto docs = documents("daemonset.yaml");
  const auto labels = find_kind(docs, "Namespace")["metadata"]["labels"];
  ASSERT_TRUE(labels) << "the namespace has no Pod Security labels";
  // hostPID and SYS_PTRACE are beyond "baseline": only "privileged" admits the DaemonSet.
  EXPECT_EQ(labels["pod-security.kubernetes.io/enforce"].as<std::string>(), "privileged");
  EXPECT_EQ(labels["pod-security.kubernetes.io/audit"].as<std::string>(), "baseline");
  EXPECT_EQ(find_kind(docs, "DaemonSet")["metadata"]["namespace"].as<std::string>(),
            find_kind(docs, "Namespace")["metadata"]["name"].as<std::string>());
}

TEST(DaemonSet, SocketGroupIsOneTheDaemonBelongsTo) {
  const auto docs = documents("daemonset.yaml");
  const auto config =
      YAML::Load(find_kind(docs, "ConfigMap")["data"]["ramguard.yaml"].as<std::string>());
  const auto pod = find_kind(docs, "DaemonSet")["spec"]["template"]["spec"];
  ASSERT_TRUE(config["control"]["socket_group"]) << "non-root coordinators cannot connect";
  const auto gid = config["control"]["socket_group"].as<std::string>();
  // Without CAP_CHOWN the daemon can give its socket only to a group it is a member of.
  std::vector<std::string> groups = strings(pod["securityContext"]["supplementalGroups"]);
  EXPECT_TRUE(contains(groups, gid)) << gid;
}

TEST(Sidecar, BudgetIsTheCoordinatorsMemoryLimit) {
  const auto docs = documents("sidecar-job.yaml");
  const auto config =
      YAML::Load(find_kind(docs, "ConfigMap")["data"]["ramguard.yaml"].as<std::string>());
  const auto pod = find_kind(docs, "Job")["spec"]["template"]["spec"];
  const auto guard = container_named(pod["initContainers"], "ramguard");
  const auto coordinator = container_named(pod["containers"], "coordinator");
  // Written alike ("20Gi"), read alike: ramguard takes Kubernetes quantities as sizes.
  EXPECT_EQ(config["budget"].as<std::string>(),
            coordinator["resources"]["limits"]["memory"].as<std::string>());
  EXPECT_EQ(mount_path(guard, "ramguard-config") + "/ramguard.yaml", arg_value(guard, "--config"));
  std::string config_map;
  for (const auto& v : pod["volumes"]) {
    if (v["name"].as<std::string>() == "ramguard-config") {
      config_map = v["configMap"]["name"].as<std::string>();
    }
  }
  EXPECT_EQ(config_map, find_kind(docs, "ConfigMap")["metadata"]["name"].as<std::string>());
}

TEST(Sidecar, PodMeetsTheRestrictedPodSecurityLevel) {
  const auto pod = find_kind(documents("sidecar-job.yaml"), "Job")["spec"]["template"]["spec"];
  EXPECT_TRUE(pod["securityContext"]["runAsNonRoot"].as<bool>());
  EXPECT_EQ(pod["securityContext"]["seccompProfile"]["type"].as<std::string>(), "RuntimeDefault");
  EXPECT_FALSE(pod["hostPID"]);
  for (const char* list : {"initContainers", "containers"}) {
    for (const auto& c : pod[list]) {
      const auto name = c["name"].as<std::string>();
      EXPECT_FALSE(c["securityContext"]["allowPrivilegeEscalation"].as<bool>(true)) << name;
      EXPECT_EQ(strings(c["securityContext"]["capabilities"]["drop"]),
                std::vector<std::string>{"ALL"})
          << name;
    }
  }
}

// The PrometheusRule is generated from the rules file: the same groups, node for node.
TEST(PrometheusRule, SpecIsTheRulesFile) {
  const auto rule = find_kind(documents("prometheusrule.yaml"), "PrometheusRule");
  const auto rules = YAML::LoadFile((kDeploy / "prometheus" / "ramguard.rules.yml").string());
  ASSERT_TRUE(rule["spec"]["groups"]) << "no spec.groups";
  EXPECT_EQ(YAML::Dump(rule["spec"]["groups"]), YAML::Dump(rules["groups"]))
      << "rerun deploy/kubernetes/generate_prometheusrule.py";
  EXPECT_EQ(rule["apiVersion"].as<std::string>(), "monitoring.coreos.com/v1");
}

TEST(PodMonitor, SelectsBothDeploymentsOnTheirMetricsPortWithoutHonorLabels) {
  const auto monitor = find_kind(documents("podmonitor.yaml"), "PodMonitor");
  const std::string selected =
      monitor["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"].as<std::string>();
  const auto endpoint = monitor["spec"]["podMetricsEndpoints"][0];
  EXPECT_EQ(endpoint["port"].as<std::string>(), "metrics");
  // The training job is ramguard_job: Prometheus's own job label is the scrape's.
  EXPECT_FALSE(endpoint["honorLabels"]);
  const auto ds = find_kind(documents("daemonset.yaml"), "DaemonSet");
  const auto job = find_kind(documents("sidecar-job.yaml"), "Job");
  EXPECT_EQ(
      ds["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"].as<std::string>(),
      selected);
  EXPECT_EQ(
      job["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"].as<std::string>(),
      selected);
}

TEST(Prometheus, ScrapeConfigLeavesPrometheusItsOwnJobLabel) {
  // The training job is ramguard_job: nothing needs honor_labels, so none is set.
  const auto config = YAML::LoadFile((kDeploy / "prometheus" / "prometheus.yml").string());
  ASSERT_TRUE(config["scrape_configs"].IsSequence());
  ASSERT_GE(config["scrape_configs"].size(), 1u);
  for (const auto& job : config["scrape_configs"]) {
    EXPECT_FALSE(job["honor_labels"]) << job["job_name"].as<std::string>();
  }
}

std::multimap<std::string, std::string> unit_keys() {
  std::multimap<std::string, std::string> keys;
  std::istringstream in(read_text(kDeploy / "systemd" / "ramguardd.service"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line[0] == '[') continue;
    const auto eq = line.find('=');
    if (eq != std::string::npos) keys.emplace(line.substr(0, eq), line.substr(eq + 1));
  }
  return keys;
}

std::string unit_value(const std::multimap<std::string, std::string>& keys, const std::string& k) {
  auto it = keys.find(k);
  return it == keys.end() ? "" : it->second;
}

TEST(SystemdUnit, KeepsProcAccessReloadsWithSighupAndUsesItsDirectories) {
  const auto keys = unit_keys();
  EXPECT_EQ(unit_value(keys, "RuntimeDirectory"), "ramguard");
  EXPECT_EQ(unit_value(keys, "StateDirectory"), "ramguard");
  const std::string start = unit_value(keys, "ExecStart");
  EXPECT_NE(start.find("--socket /run/ramguard/"), std::string::npos) << start;
  EXPECT_NE(start.find("--state-dir /var/lib/ramguard"), std::string::npos) << start;
  bool hup = false;
  for (auto [it, end] = keys.equal_range("ExecReload"); it != end; ++it) {
    hup = hup || it->second.find("kill -HUP $MAINPID") != std::string::npos;
  }
  EXPECT_TRUE(hup);
  const std::string caps = unit_value(keys, "CapabilityBoundingSet");
  EXPECT_NE(caps.find("CAP_SYS_PTRACE"), std::string::npos);
  EXPECT_NE(caps.find("CAP_DAC_OVERRIDE"), std::string::npos);
  EXPECT_EQ(caps.find("CAP_KILL"), std::string::npos);
  // ProtectProc=invisible/ptraceable or ProcSubset=pid would hide the coordinators.
  EXPECT_EQ(unit_value(keys, "ProtectProc"), "default");
  EXPECT_EQ(unit_value(keys, "ProcSubset"), "all");
  EXPECT_EQ(unit_value(keys, "NoNewPrivileges"), "yes");
  EXPECT_EQ(unit_value(keys, "KillSignal"), "SIGTERM");
}

TEST(Dockerfile, BuildsOnBookwormAndRunsRamguarddAsEntrypoint) {
  const std::string text = read_text(std::filesystem::path(RAMGUARD_SOURCE_DIR) / "Dockerfile");
  std::size_t froms = 0;
  for (std::size_t at = text.find("\nFROM "); at != std::string::npos;
       at = text.find("\nFROM ", at + 1)) {
    ++froms;
    EXPECT_EQ(text.compare(at + 6, 20, "debian:bookworm-slim"), 0) << text.substr(at, 40);
  }
  EXPECT_EQ(froms, 2u);  // build stage and slim runtime stage
  EXPECT_NE(text.find("cmake --build"), std::string::npos);
  EXPECT_NE(text.find("ENTRYPOINT [\"/usr/sbin/ramguardd\"]"), std::string::npos);
  EXPECT_NE(text.find("COPY --from=build"), std::string::npos);
}

// The Dockerfile's HEALTHCHECK command (its exec form, a JSON array, which YAML reads).
std::vector<std::string> healthcheck_command() {
  const std::string text = read_text(std::filesystem::path(RAMGUARD_SOURCE_DIR) / "Dockerfile");
  const auto at = text.find("\nHEALTHCHECK ");
  if (at == std::string::npos) return {};
  const auto open = text.find("CMD [", at);
  const auto close = text.find(']', open);
  if (open == std::string::npos || close == std::string::npos) return {};
  std::string array = text.substr(open + 4, close - open - 3);
  std::erase(array, '\\');  // line continuations
  return strings(YAML::Load(array));
}

TEST(Probes, EveryRamguardProbeIsTheImagesHealthcheckOnTheSocketOfItsDeployment) {
  const auto command = healthcheck_command();
  ASSERT_GE(command.size(), 2u) << "no HEALTHCHECK CMD [...] in the Dockerfile";
  EXPECT_EQ(command.back(), "hello");
  const auto docs = documents("daemonset.yaml");
  const auto daemon = container_named(
      find_kind(docs, "DaemonSet")["spec"]["template"]["spec"]["containers"], "ramguardd");
  const auto sidecar = container_named(
      find_kind(documents("sidecar-job.yaml"), "Job")["spec"]["template"]["spec"]["initContainers"],
      "ramguard");
  const auto config =
      YAML::Load(find_kind(docs, "ConfigMap")["data"]["ramguard.yaml"].as<std::string>());
  const std::map<std::string, std::pair<YAML::Node, std::string>> deployments{
      {"daemonset", {daemon, config["control"]["socket"].as<std::string>()}},
      {"sidecar", {sidecar, arg_value(sidecar, "--socket")}}};
  for (const auto& [name, deployment] : deployments) {
    const auto& [container, socket] = deployment;
    EXPECT_EQ(arg_value_in(command, "--socket"), socket) << name;
    int probes = 0;
    for (const char* probe : {"startupProbe", "livenessProbe", "readinessProbe"}) {
      if (!container[probe]) continue;
      ++probes;
      EXPECT_EQ(strings(container[probe]["exec"]["command"]), command) << name << " " << probe;
    }
    EXPECT_GE(probes, 1) << name;
  }
}

// ramguardd --check-config on the ConfigMap of a manifest: its exit status.
int check_config_map(const std::string& manifest) {
  const char* ramguardd = std::getenv("RAMGUARDD");
  EXPECT_NE(ramguardd, nullptr) << "RAMGUARDD must name the ramguardd binary";
  if (ramguardd == nullptr) return -1;
  const auto docs = documents(manifest);
  const auto file = std::filesystem::temp_directory_path() / "ramguard-configmap-check.yaml";
  std::ofstream(file) << find_kind(docs, "ConfigMap")["data"]["ramguard.yaml"].as<std::string>();
  const std::string command =
      std::string(ramguardd) + " --check-config '" + file.string() + "' 2>&1";
  const int status = std::system(command.c_str());
  std::filesystem::remove(file);
  EXPECT_TRUE(WIFEXITED(status));
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(DaemonSet, CheckConfigAcceptsTheConfigMap) {
  EXPECT_EQ(check_config_map("daemonset.yaml"), 0);
}

TEST(Sidecar, CheckConfigAcceptsItsConfigMap) {
  EXPECT_EQ(check_config_map("sidecar-job.yaml"), 0);
}

}  // namespace
