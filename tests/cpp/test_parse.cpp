#include <catch2/catch.hpp>

#include "cgroup/backend.hpp"
#include "edgeprof/error.hpp"
#include "helpers.hpp"
#include "sys/parse.hpp"

using namespace edgeprof::detail;
using edgeprof::test::fixture;

TEST_CASE("parse_u64 takes decimal integers and nothing else", "[parse]") {
  CHECK(parse_u64("42\n") == 42u);
  CHECK(parse_u64("  18446744073709551615 ") == 18446744073709551615ull);
  CHECK_FALSE(parse_u64(""));
  CHECK_FALSE(parse_u64("-1"));
  CHECK_FALSE(parse_u64("12abc"));
  CHECK_FALSE(parse_u64("18446744073709551616"));  // overflow
}

TEST_CASE("switch_setting: unset for the default, a switch's words, an Error for anything else",
          "[parse]") {
  CHECK(switch_setting("EDGEPROF_X", nullptr, true));
  CHECK_FALSE(switch_setting("EDGEPROF_X", "", false));
  CHECK(switch_setting("EDGEPROF_X", "yes", false));
  CHECK_FALSE(switch_setting("EDGEPROF_X", "Off", true));
  // Once "yes" read as off for one variable and "no" as on for another, silently.
  CHECK_THROWS_WITH(switch_setting("EDGEPROF_X", "2", true),
                    Catch::Contains("EDGEPROF_X=2 is not a switch") &&
                        Catch::Contains("0 (or false, off, no)") && Catch::Contains("(on)"));
  CHECK_THROWS_AS(switch_setting("EDGEPROF_X", "\x1b[31m", false), edgeprof::Error);
  CHECK_THROWS_WITH(switch_setting("EDGEPROF_X", "\x1b[31m", false), Catch::Contains("\\u001b"));
}

TEST_CASE("parse_switch reads an on/off switch, anything else as unset", "[parse]") {
  for (const char* on : {"1", "true", "ON", " Yes\n"}) CHECK(parse_switch(on) == true);
  for (const char* off : {"0", "False", "off", "NO"}) CHECK(parse_switch(off) == false);
  for (const char* other : {"", " ", "2", "enable", "0x1", "y"}) {
    CAPTURE(other);
    CHECK_FALSE(parse_switch(other));
  }
}

TEST_CASE("find_key reads flat-keyed files", "[parse]") {
  const std::string text = "nr_periods 30\nnr_throttled 27\nthrottled_time 132976148\n";
  CHECK(find_key(text, "nr_periods") == 30u);
  CHECK(find_key(text, "throttled_time") == 132976148u);
  CHECK_FALSE(find_key(text, "nr_throttle"));  // a prefix of a key is not the key
  CHECK_FALSE(find_key(text, "missing"));
  CHECK(find_key("MemTotal:       24591236 kB\n", "MemTotal:") == 24591236u);
  CHECK(find_key("oom_kill_disable 0\nunder_oom 0\noom_kill 1", "oom_kill") == 1u);
  // A key that also ends another key (v1 memory.stat: rss, total_rss) is found only where it
  // begins its line.
  const std::string stat = "cache 5\nrss 7\nrss_huge 0\ntotal_cache 50\ntotal_rss 70\n";
  CHECK(find_key(stat, "rss") == 7u);
  CHECK(find_key(stat, "total_rss") == 70u);
  CHECK(find_key(stat, "cache") == 5u);
  // Leading blanks and CRLF are tolerated; a line without a number is passed over.
  CHECK(find_key("  a 1\r\n\tb 2\r\n", "b") == 2u);
  CHECK(find_key("a x\na 3\n", "a") == 3u);
  CHECK_FALSE(find_key("a\nb 1\n", "a"));
  CHECK_FALSE(find_key("b 1\na", "a"));
  CHECK_FALSE(find_key("a 1\n", ""));
}

TEST_CASE("find_keys reads several keys in one pass", "[parse]") {
  const std::string stat = "cache 5\nrss 7\ntotal_cache 50\ntotal_rss x\ntotal_rss 70\n";
  const std::string_view keys[] = {"total_rss", "cache", "missing", "rss", "total_rss"};
  std::optional<std::uint64_t> out[5] = {1u, 1u, 1u, 1u, 1u};  // overwritten, also when absent
  find_keys(stat, keys, out);
  CHECK(out[0] == 70u);  // the first line with a number
  CHECK(out[1] == 5u);
  CHECK_FALSE(out[2]);
  CHECK(out[3] == 7u);
  CHECK(out[4] == 70u);  // a key asked for twice
}

TEST_CASE("parse_proc_cgroup reads hybrid and unified membership", "[parse]") {
  auto hybrid = parse_proc_cgroup(
      "9:name=systemd:/\n4:memory:/process_api/abc\n2:cpu,cpuacct:/a b\n0::/\n");
  REQUIRE(hybrid.size() == 4);
  CHECK(hybrid[1].hierarchy == 4);
  CHECK(hybrid[1].controllers == std::vector<std::string>{"memory"});
  CHECK(hybrid[1].path == "/process_api/abc");
  CHECK(hybrid[2].controllers == std::vector<std::string>{"cpu", "cpuacct"});
  CHECK(hybrid[2].path == "/a b");
  CHECK(hybrid[3].controllers.empty());
  auto unified = parse_proc_cgroup("0::/user.slice/user-1000.slice/session-2.scope\n");
  REQUIRE(unified.size() == 1);
  CHECK(unified[0].path == "/user.slice/user-1000.slice/session-2.scope");
}

TEST_CASE("parse_stat_starttime and parse_stat_ppid survive odd command names", "[parse]") {
  const std::string stat =
      "1234 (a (weird) name) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 "
      "98765 1000000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n";
  CHECK(parse_stat_starttime(stat) == 98765u);
  CHECK(parse_stat_ppid(stat) == 1);
  CHECK_FALSE(parse_stat_starttime("garbage"));
  CHECK_FALSE(parse_stat_ppid("garbage"));
  CHECK_FALSE(parse_stat_ppid("1234 (x) S"));
  CHECK_FALSE(parse_stat_ppid("1234 (x) S -1 1234"));
}

TEST_CASE("parse_stat_processor reads the CPU a task last ran on", "[parse]") {
  // A shell's line captured on this project's host (Linux 6.18), its command name made odd and
  // its processor (field 39) set to 1.
  const std::string stat =
      "21252 (a) b (c) S 21250 21252 21252 0 -1 4194560 24628 385225 0 331 4 15 431 138 20 0 1 "
      "0 1046836 5246976 976 18446744073709551615 94562772533248 94562773322653 140727566450672 "
      "0 0 0 65536 4 1132560123 1 0 0 17 1 0 0 0 0 0 94562773555952 94562773604196 "
      "94563570110464 140727566457725 140727566457740 140727566457740 140727566458858 0\n";
  CHECK(parse_stat_processor(stat) == 1);
  CHECK(parse_stat_starttime(stat) == 1046836u);
  CHECK_FALSE(parse_stat_processor("garbage"));
  CHECK_FALSE(parse_stat_processor("1234 (x) S 1 1234"));  // too few fields
}

TEST_CASE("slice names round-trip and reject look-alikes", "[parse]") {
  SliceName name{4242, 987654, 7};
  CHECK(format_slice_name(name) == "edgeprof-4242-987654-7");
  auto back = parse_slice_name("edgeprof-4242-987654-7");
  REQUIRE(back);
  CHECK(back->owner == 4242);
  CHECK(back->owner_start == 987654u);
  CHECK(back->sequence == 7u);
  CHECK(back->pid_ns == 0u);  // a name from before the namespace was in it
  // With the owner's pid namespace (the inode of its /proc/self/ns/pid).
  const SliceName with_ns{4242, 987654, 7, 4026531836};
  CHECK(format_slice_name(with_ns) == "edgeprof-4242-987654-7-4026531836");
  const auto ns_back = parse_slice_name("edgeprof-4242-987654-7-4026531836");
  REQUIRE(ns_back);
  CHECK(ns_back->owner == 4242);
  CHECK(ns_back->sequence == 7u);
  CHECK(ns_back->pid_ns == 4026531836u);
  CHECK_FALSE(parse_slice_name("edgeprof-caller"));
  CHECK_FALSE(parse_slice_name("edgeprof-1-2"));
  CHECK_FALSE(parse_slice_name("edgeprof-1-2-3-4-5"));
  CHECK_FALSE(parse_slice_name("edgeprof-1-2-3-0"));
  CHECK_FALSE(parse_slice_name("edgeprof-1-2-3-"));
  CHECK_FALSE(parse_slice_name("edgeprof-0-2-3"));
  CHECK_FALSE(parse_slice_name("edgeprof-4294967296-2-3"));
  CHECK_FALSE(parse_slice_name("other-1-2-3"));
  // Only what format_slice_name() writes: these parsed as pid 1's slices before, and a sweep
  // would have killed what was in them.
  for (const char* look_alike : {"edgeprof-01-2-3", "edgeprof-1-02-3", "edgeprof-1-2-03",
                                 "edgeprof-1-2-3-04", "edgeprof- 1-2-3", "edgeprof-1-2-3 ",
                                 "edgeprof-1-2- 3-4"}) {
    CHECK_FALSE(parse_slice_name(look_alike));
  }
}

TEST_CASE("cpu.stat and cpuacct parse into one shape, in nanoseconds", "[parse]") {
  const CpuStat v2 = parse_cpu_stat_v2(fixture("v2/cpu.stat"));
  CHECK(v2.usage_ns == 756803000u);
  CHECK(v2.user_ns == 637524000u);
  CHECK(v2.system_ns == 119278000u);
  CHECK(v2.periods == 15u);
  CHECK(v2.throttled_periods == 15u);
  CHECK(v2.throttled_ns == 724491000u);
  // Without the cpu controller: usage only, no throttling fields (absent, not zero).
  const CpuStat bare = parse_cpu_stat_v2("usage_usec 5\nuser_usec 3\nsystem_usec 2\n");
  CHECK(bare.user_ns == 3000u);
  CHECK_FALSE(bare.periods);

  const CpuStat v1 = parse_cpu_stat_v1(fixture("v1/cpu.stat"));
  CHECK(v1.periods == 30u);
  CHECK(v1.throttled_periods == 27u);
  CHECK(v1.throttled_ns == 132976148u);
  CHECK_FALSE(v1.usage_ns);

  const CpuStat acct = parse_cpuacct(fixture("v1/cpuacct.usage"), fixture("v1/cpuacct.stat"));
  CHECK(acct.usage_ns == 145791359u);
  CHECK(*acct.user_ns + *acct.system_ns == 145791359u);
  CHECK(acct.user_ns == split_cpu_time(145791359, 8, 6).user_ns);
  CHECK_FALSE(parse_cpuacct("garbage", "user 1\nsystem 1\n").usage_ns);
}

TEST_CASE("v1 CPU time is the exact total split in the ratio of the ticks", "[parse]") {
  auto split = split_cpu_time(757270296, 75, 0);
  CHECK(split.user_ns == 757270296u);
  CHECK(split.system_ns == 0u);
  split = split_cpu_time(1000, 3, 1);
  CHECK(split.user_ns == 750u);
  CHECK(split.system_ns == 250u);
  split = split_cpu_time(500, 0, 0);
  CHECK(split.user_ns == 500u);
  // A CPU-year of nanoseconds times many ticks does not overflow.
  split = split_cpu_time(31536000000000000ull, 3153600000ull, 3153600000ull);
  CHECK(split.user_ns == 15768000000000000ull);
}

TEST_CASE("parse_pids and split_words", "[parse]") {
  CHECK(parse_pids("12\n345\n\n") == std::vector<pid_t>{12, 345});
  CHECK(parse_pids("").empty());
  // cgroup.procs lists a process of another pid namespace as 0: no pid of ours (kill(0) would
  // signal the caller's own process group), nor a number no pid_t holds (it would go negative).
  CHECK(parse_pids("0\n4294967295\n12\n2147483648\n") == std::vector<pid_t>{12});
  CHECK(lists_processes("0\n"));
  CHECK(lists_processes("12\n"));
  CHECK_FALSE(lists_processes(""));
  CHECK_FALSE(lists_processes("\n"));
  CHECK(split_words("cpuset cpu io memory hugetlb pids\n") ==
        std::vector<std::string>{"cpuset", "cpu", "io", "memory", "hugetlb", "pids"});
}

TEST_CASE("a CPU bandwidth limit in either version's files", "[parse]") {
  const auto v2 = parse_cpu_max("20000 100000\n");
  REQUIRE(v2);
  CHECK(v2->quota_us == std::optional<std::uint64_t>(20000));
  CHECK(v2->period_us == 100000);
  const auto unlimited = parse_cpu_max("max 100000\n");
  REQUIRE(unlimited);
  CHECK_FALSE(unlimited->quota_us);
  CHECK(unlimited->period_us == 100000);
  CHECK_FALSE(parse_cpu_max(""));
  CHECK_FALSE(parse_cpu_max("max"));
  CHECK_FALSE(parse_cpu_max("-1 100000"));
  CHECK_FALSE(parse_cpu_max("20000 0"));
  CHECK_FALSE(parse_cpu_max("20000 100000 7"));
  const auto v1 = parse_cfs_bandwidth("25000\n", "100000\n");
  REQUIRE(v1);
  CHECK(v1->quota_us == std::optional<std::uint64_t>(25000));
  CHECK(v1->period_us == 100000);
  const auto v1_unlimited = parse_cfs_bandwidth("-1\n", "100000\n");
  REQUIRE(v1_unlimited);
  CHECK_FALSE(v1_unlimited->quota_us);
  CHECK_FALSE(parse_cfs_bandwidth("-2", "100000"));
  CHECK_FALSE(parse_cfs_bandwidth("1000", "x"));
}

TEST_CASE("core groups' limits read as one: summed, unlimited if any is", "[parse]") {
  const CpuMax a{25000, 100000};
  const auto sum = sum_core_bandwidths({a, a, a});
  REQUIRE(sum);
  CHECK(sum->quota_us == std::optional<std::uint64_t>(75000));
  CHECK(sum->period_us == 100000);
  const auto open = sum_core_bandwidths({a, CpuMax{std::nullopt, 100000}});
  REQUIRE(open);
  CHECK_FALSE(open->quota_us);
  CHECK_FALSE(sum_core_bandwidths({a, std::nullopt}));
  CHECK_FALSE(sum_core_bandwidths({CpuMax{std::nullopt, 100000}, std::nullopt}));
  CHECK_FALSE(sum_core_bandwidths({a, CpuMax{25000, 50000}}));  // a change half written
  CHECK_FALSE(sum_core_bandwidths({}));
}

TEST_CASE("parsers read real cgroup v1 captures", "[parse][fixtures]") {
  const std::string stat = fixture("v1/cpu.stat");
  CHECK(find_key(stat, "nr_periods") == 30u);
  CHECK(find_key(stat, "nr_throttled") == 27u);
  CHECK(find_key(stat, "throttled_time") == 132976148u);
  CHECK(find_key(fixture("v1/memory.oom_control"), "oom_kill") == 1u);
  CHECK(parse_u64(fixture("v1/memory.max_usage_in_bytes")) == 16777216u);
  // The capture shows why cpuacct.usage_user is not used: user + sys exceeds the exact usage.
  CHECK(*parse_u64(fixture("v1/cpuacct.usage_user")) + *parse_u64(fixture("v1/cpuacct.usage_sys")) >
        *parse_u64(fixture("v1/cpuacct.usage")));
  CHECK(find_key(fixture("v1/memory.stat"), "hierarchical_memory_limit") == 16777216u);
  auto own = parse_proc_cgroup(fixture("v1/proc_self_cgroup"));
  REQUIRE(own.size() == 10);
  CHECK(own[5].controllers == std::vector<std::string>{"memory"});
  CHECK(own[5].path.rfind("/process_api/", 0) == 0);
}

TEST_CASE("parsers read real cgroup v2 captures", "[parse][fixtures]") {
  const std::string stat = fixture("v2/cpu.stat");
  auto usage = find_key(stat, "usage_usec");
  auto user = find_key(stat, "user_usec");
  auto system = find_key(stat, "system_usec");
  REQUIRE(usage);
  REQUIRE(user);
  REQUIRE(system);
  CHECK(*usage >= *user);
  CHECK(find_key(stat, "nr_throttled").value_or(0) > 0);
  CHECK(find_key(fixture("v2/memory.events.oom"), "oom_kill").value_or(0) >= 1);
  CHECK(parse_u64(fixture("v2/memory.peak")).value_or(0) > (20u << 20));
  auto controllers = split_words(fixture("v2/cgroup.controllers"));
  CHECK(std::find(controllers.begin(), controllers.end(), "memory") != controllers.end());
  auto own = parse_proc_cgroup(fixture("v2/proc_self_cgroup"));
  REQUIRE(own.size() == 1);
  CHECK(own[0].hierarchy == 0);
}

TEST_CASE("io.stat is summed over devices", "[parse][sampler]") {
  auto t = parse_io_stat(
      "8:0 rbytes=1000 wbytes=2000 rios=3 wios=4 dbytes=0 dios=0\n"
      "253:1 rbytes=10 wbytes=20 rios=1 wios=2 dbytes=5 dios=1\n");
  CHECK(t.read_bytes == 1010u);
  CHECK(t.write_bytes == 2020u);
  CHECK(t.read_ops == 4u);
  CHECK(t.write_ops == 6u);
  CHECK(parse_io_stat("").read_bytes == 0u);
  auto captured = parse_io_stat(fixture("v2/io.stat"));
  CHECK(captured.read_bytes == 4194304u);
  CHECK(captured.write_bytes == 8388608u);
  CHECK(captured.read_ops == 16u);
  CHECK(captured.write_ops == 32u);
}

TEST_CASE("v1 blkio files sum the Read and Write lines of every device", "[parse][sampler]") {
  auto rw = parse_blkio("8:0 Read 100\n8:0 Write 7\n8:0 Sync 107\n8:0 Async 0\n8:0 Total 107\n"
                        "8:16 Read 1\n8:16 Write 2\nTotal 110\n");
  CHECK(rw.read == 101u);
  CHECK(rw.write == 9u);
  CHECK(parse_blkio("Total 0\n").read == 0u);
  auto bytes = parse_blkio(fixture("v1/blkio.throttle.io_service_bytes"));
  CHECK(bytes.read == 8192u);
  CHECK(bytes.write == 4194304u);
  auto ops = parse_blkio(fixture("v1/blkio.throttle.io_serviced"));
  CHECK(ops.read == 2u);
  CHECK(ops.write == 8u);
}

TEST_CASE("pressure files give the some and full stall totals", "[parse][sampler]") {
  auto p = parse_pressure(
      "some avg10=1.50 avg60=0.20 avg300=0.00 total=123456\n"
      "full avg10=0.00 avg60=0.00 avg300=0.00 total=789\n");
  CHECK(p.some_us == 123456u);
  CHECK(p.full_us == 789u);
  auto old_cpu = parse_pressure("some avg10=0.00 avg60=0.00 avg300=0.00 total=5\n");
  CHECK(old_cpu.some_us == 5u);
  CHECK_FALSE(old_cpu.full_us);
  CHECK(parse_pressure(fixture("v2/cpu.pressure")).some_us == 728264u);
  CHECK(parse_pressure(fixture("v2/memory.pressure")).some_us);
  CHECK(parse_pressure(fixture("v1/proc_pressure_memory")).full_us == 16156u);
}

TEST_CASE("memory.stat gives the anon, file and fault figures on v1 and v2", "[parse][sampler]") {
  const std::string v2 = fixture("v2/memory.stat");
  CHECK(find_key(v2, "anon") == 21012480u);
  CHECK(find_key(v2, "file") == 4096u);
  CHECK(find_key(v2, "pgmajfault"));
  const std::string v1 = fixture("v1/memory.stat");
  CHECK(find_key(v1, "total_rss") == 0u);
  CHECK(find_key(v1, "total_cache") == 24576u);
  CHECK(find_key(v1, "total_pgmajfault") == 0u);
}

TEST_CASE("net/dev: totals over every interface", "[parse]") {
  const std::string text =
      "Inter-|   Receive                                                |  Transmit\n"
      " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs "
      "drop fifo colls carrier compressed\n"
      "    lo:    6386      58    0    0    0     0          0         0     6386      58    0 "
      "   0    0     0       0          0\n"
      "  eth0: 1000 10 0 0 0 0 0 0 2000 20 0 0 0 0 0 0\n";
  auto t = parse_net_dev(text);
  REQUIRE(t);
  CHECK(t->rx_bytes == 7386);
  CHECK(t->rx_packets == 68);
  CHECK(t->tx_bytes == 8386);
  CHECK(t->tx_packets == 78);
  CHECK_FALSE(parse_net_dev("something else\n"));
  CHECK_FALSE(parse_net_dev("Inter-|\n face |\n lo: 1 2 x\n"));
}
