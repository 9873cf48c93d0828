// An hwloc 2 XML export of a four-node QEMU guest (one CPU and about 500 MiB
// per node; latency distances 10/20/30 on a ring: 0-1-2-3-0), so tests reason
// about a multi-node host on any machine. Nodes 0 and 2, and 1 and 3, are
// each other's farthest. The NIC (PCI class 0x0200) hangs off the machine,
// with no single-node locality.
#ifndef HEATSINK_TESTS_RUNTIME_NUMA_FOUR_NODE_TOPOLOGY_H_
#define HEATSINK_TESTS_RUNTIME_NUMA_FOUR_NODE_TOPOLOGY_H_

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "runtime/numa/topology.h"

namespace heatsink::runtime::testing {

inline constexpr char kFourNodeTopologyXml[] = R"xml(<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd">
<topology version="2.0">
  <object type="Machine" os_index="0" cpuset="0x0000000f" complete_cpuset="0x0000000f" allowed_cpuset="0x0000000f" nodeset="0x0000000f" complete_nodeset="0x0000000f" allowed_nodeset="0x0000000f" gp_index="1">
    <info name="DMIProductName" value="Standard PC (i440FX + PIIX, 1996)"/>
    <info name="DMIProductVersion" value="pc-i440fx-7.2"/>
    <info name="DMIProductSerial" value=""/>
    <info name="DMIChassisVendor" value="QEMU"/>
    <info name="DMIChassisType" value="1"/>
    <info name="DMIChassisVersion" value="pc-i440fx-7.2"/>
    <info name="DMIChassisSerial" value=""/>
    <info name="DMIChassisAssetTag" value=""/>
    <info name="DMIBIOSVendor" value="SeaBIOS"/>
    <info name="DMIBIOSVersion" value="1.16.2-debian-1.16.2-1"/>
    <info name="DMIBIOSDate" value="04/01/2014"/>
    <info name="DMISysVendor" value="QEMU"/>
    <info name="Backend" value="Linux"/>
    <info name="OSName" value="Linux"/>
    <info name="OSRelease" value="6.1.0-57-amd64"/>
    <info name="OSVersion" value="#1 SMP PREEMPT_DYNAMIC Debian 6.1.192-3 (2026-11-26)"/>
    <info name="HostName" value="(none)"/>
    <info name="Architecture" value="x86_64"/>
    <info name="hwlocVersion" value="2.9.0"/>
    <info name="ProcessName" value="lstopo-no-graphics"/>
    <object type="Package" os_index="0" cpuset="0x0000000f" complete_cpuset="0x0000000f" nodeset="0x0000000f" complete_nodeset="0x0000000f" gp_index="3">
      <info name="CPUVendor" value="AuthenticAMD"/>
      <info name="CPUFamilyNumber" value="15"/>
      <info name="CPUModelNumber" value="107"/>
      <info name="CPUModel" value="QEMU TCG CPU version 2.5+"/>
      <info name="CPUStepping" value="1"/>
      <object type="L3Cache" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="8" cache_size="16777216" depth="3" cache_linesize="64" cache_associativity="16" cache_type="0">
        <info name="Inclusive" value="0"/>
        <object type="NUMANode" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="27" local_memory="526983168">
          <page_type size="4096" count="128658"/>
          <page_type size="2097152" count="0"/>
          <page_type size="1073741824" count="0"/>
        </object>
        <object type="L2Cache" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="7" cache_size="524288" depth="2" cache_linesize="64" cache_associativity="16" cache_type="0">
          <info name="Inclusive" value="0"/>
          <object type="L1Cache" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="5" cache_size="65536" depth="1" cache_linesize="64" cache_associativity="2" cache_type="1">
            <info name="Inclusive" value="0"/>
            <object type="L1iCache" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="6" cache_size="65536" depth="1" cache_linesize="64" cache_associativity="2" cache_type="2">
              <info name="Inclusive" value="0"/>
              <object type="Core" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="2">
                <object type="PU" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="4"/>
              </object>
            </object>
          </object>
        </object>
      </object>
      <object type="L3Cache" os_index="1" cpuset="0x00000002" complete_cpuset="0x00000002" nodeset="0x00000002" complete_nodeset="0x00000002" gp_index="14" cache_size="16777216" depth="3" cache_linesize="64" cache_associativity="16" cache_type="0">
        <info name="Inclusive" value="0"/>
        <object type="NUMANode" os_index="1" cpuset="0x00000002" complete_cpuset="0x00000002" nodeset="0x00000002" complete_nodeset="0x00000002" gp_index="28" local_memory="481689600">
          <page_type size="4096" count="117600"/>
          <page_type size="2097152" count="0"/>
          <page_type size="1073741824" count="0"/>
        </object>
        <object type="L2Cache" os_index="1" cpuset="0x00000002" complete_cpuset="0x00000002" nodeset="0x00000002" complete_nodeset="0x00000002" gp_index="13" cache_size="524288" depth="2" cache_linesize="64" cache_associativity="16" cache_type="0">
          <info name="Inclusive" value="0"/>
          <object type="L1Cache" os_index="1" cpuset="0x00000002" complete_cpuset="0x00000002" nodeset="0x00000002" complete_nodeset="0x00000002" gp_index="11" cache_size="65536" depth="1" cache_linesize="64" cache_associativity="2" cache_type="1">
            <info name="Inclusive" value="0"/>
            <object type="L1iCache" os_index="1" cpuset="0x00000002" complete_cpuset="0x00000002" nodeset="0x00000002" complete_nodeset="0x00000002" gp_index="12" cache_size="65536" depth="1" cache_linesize="64" cache_associativity="2" cache_type="2">
              <info name="Inclusive" value="0"/>
              <object type="Core" os_index="1" cpuset="0x00000002" complete_cpuset="0x00000002" nodeset="0x00000002" complete_nodeset="0x00000002" gp_index="9">
                <object type="PU" os_index="1" cpuset="0x00000002" complete_cpuset="0x00000002" nodeset="0x00000002" complete_nodeset="0x00000002" gp_index="10"/>
              </object>
            </object>
          </object>
        </object>
      </object>
      <object type="L3Cache" os_index="2" cpuset="0x00000004" complete_cpuset="0x00000004" nodeset="0x00000004" complete_nodeset="0x00000004" gp_index="20" cache_size="16777216" depth="3" cache_linesize="64" cache_associativity="16" cache_type="0">
        <info name="Inclusive" value="0"/>
        <object type="NUMANode" os_index="2" cpuset="0x00000004" complete_cpuset="0x00000004" nodeset="0x00000004" complete_nodeset="0x00000004" gp_index="29" local_memory="528048128">
          <page_type size="4096" count="128918"/>
          <page_type size="2097152" count="0"/>
          <page_type size="1073741824" count="0"/>
        </object>
        <object type="L2Cache" os_index="2" cpuset="0x00000004" complete_cpuset="0x00000004" nodeset="0x00000004" complete_nodeset="0x00000004" gp_index="19" cache_size="524288" depth="2" cache_linesize="64" cache_associativity="16" cache_type="0">
          <info name="Inclusive" value="0"/>
          <object type="L1Cache" os_index="2" cpuset="0x00000004" complete_cpuset="0x00000004" nodeset="0x00000004" complete_nodeset="0x00000004" gp_index="17" cache_size="65536" depth="1" cache_linesize="64" cache_associativity="2" cache_type="1">
            <info name="Inclusive" value="0"/>
            <object type="L1iCache" os_index="2" cpuset="0x00000004" complete_cpuset="0x00000004" nodeset="0x00000004" complete_nodeset="0x00000004" gp_index="18" cache_size="65536" depth="1" cache_linesize="64" cache_associativity="2" cache_type="2">
              <info name="Inclusive" value="0"/>
              <object type="Core" os_index="2" cpuset="0x00000004" complete_cpuset="0x00000004" nodeset="0x00000004" complete_nodeset="0x00000004" gp_index="15">
                <object type="PU" os_index="2" cpuset="0x00000004" complete_cpuset="0x00000004" nodeset="0x00000004" complete_nodeset="0x00000004" gp_index="16"/>
              </object>
            </object>
          </object>
        </object>
      </object>
      <object type="L3Cache" os_index="3" cpuset="0x00000008" complete_cpuset="0x00000008" nodeset="0x00000008" complete_nodeset="0x00000008" gp_index="26" cache_size="16777216" depth="3" cache_linesize="64" cache_associativity="16" cache_type="0">
        <info name="Inclusive" value="0"/>
        <object type="NUMANode" os_index="3" cpuset="0x00000008" complete_cpuset="0x00000008" nodeset="0x00000008" complete_nodeset="0x00000008" gp_index="30" local_memory="525799424">
          <page_type size="4096" count="128369"/>
          <page_type size="2097152" count="0"/>
          <page_type size="1073741824" count="0"/>
        </object>
        <object type="L2Cache" os_index="3" cpuset="0x00000008" complete_cpuset="0x00000008" nodeset="0x00000008" complete_nodeset="0x00000008" gp_index="25" cache_size="524288" depth="2" cache_linesize="64" cache_associativity="16" cache_type="0">
          <info name="Inclusive" value="0"/>
          <object type="L1Cache" os_index="3" cpuset="0x00000008" complete_cpuset="0x00000008" nodeset="0x00000008" complete_nodeset="0x00000008" gp_index="23" cache_size="65536" depth="1" cache_linesize="64" cache_associativity="2" cache_type="1">
            <info name="Inclusive" value="0"/>
            <object type="L1iCache" os_index="3" cpuset="0x00000008" complete_cpuset="0x00000008" nodeset="0x00000008" complete_nodeset="0x00000008" gp_index="24" cache_size="65536" depth="1" cache_linesize="64" cache_associativity="2" cache_type="2">
              <info name="Inclusive" value="0"/>
              <object type="Core" os_index="3" cpuset="0x00000008" complete_cpuset="0x00000008" nodeset="0x00000008" complete_nodeset="0x00000008" gp_index="21">
                <object type="PU" os_index="3" cpuset="0x00000008" complete_cpuset="0x00000008" nodeset="0x00000008" complete_nodeset="0x00000008" gp_index="22"/>
              </object>
            </object>
          </object>
        </object>
      </object>
    </object>
    <object type="Bridge" gp_index="37" bridge_type="0-1" depth="0" bridge_pci="0000:[00-00]">
      <object type="PCIDev" gp_index="35" pci_busid="0000:00:01.1" pci_type="0101 [8086:7010] [1af4:1100] 00" pci_link_speed="0.000000"/>
      <object type="PCIDev" gp_index="36" pci_busid="0000:00:02.0" pci_type="0300 [1234:1111] [1af4:1100] 02" pci_link_speed="0.000000"/>
      <object type="PCIDev" gp_index="34" pci_busid="0000:00:03.0" pci_type="0200 [8086:100e] [1af4:1100] 03" pci_link_speed="0.000000">
        <info name="PCISlot" value="3"/>
      </object>
    </object>
    <object type="Misc" os_index="0" gp_index="38" subtype="MemoryModule">
      <info name="DeviceLocation" value="DIMM 0"/>
      <info name="Vendor" value="QEMU"/>
    </object>
  </object>
  <distances2 type="NUMANode" nbobjs="4" kind="5" name="NUMALatency" indexing="os">
    <indexes length="8">0 1 2 3 </indexes>
    <u64values length="30">10 20 30 20 20 10 20 30 30 20 </u64values>
    <u64values length="18">10 20 20 30 20 10 </u64values>
  </distances2>
  <support name="discovery.pu"/>
  <support name="discovery.numa"/>
  <support name="discovery.numa_memory"/>
  <support name="discovery.disallowed_pu"/>
  <support name="discovery.disallowed_numa"/>
  <support name="cpubind.set_thisproc_cpubind"/>
  <support name="cpubind.get_thisproc_cpubind"/>
  <support name="cpubind.set_proc_cpubind"/>
  <support name="cpubind.get_proc_cpubind"/>
  <support name="cpubind.set_thisthread_cpubind"/>
  <support name="cpubind.get_thisthread_cpubind"/>
  <support name="cpubind.set_thread_cpubind"/>
  <support name="cpubind.get_thread_cpubind"/>
  <support name="cpubind.get_thisproc_last_cpu_location"/>
  <support name="cpubind.get_proc_last_cpu_location"/>
  <support name="cpubind.get_thisthread_last_cpu_location"/>
  <support name="membind.set_thisthread_membind"/>
  <support name="membind.get_thisthread_membind"/>
  <support name="membind.set_area_membind"/>
  <support name="membind.get_area_membind"/>
  <support name="membind.alloc_membind"/>
  <support name="membind.firsttouch_membind"/>
  <support name="membind.bind_membind"/>
  <support name="membind.interleave_membind"/>
  <support name="membind.migrate_membind"/>
  <support name="membind.get_area_memlocation"/>
  <support name="custom.exported_support"/>
</topology>
)xml";

// The topology above, loaded (a test failure and an empty topology if it
// does not load).
inline Topology FourNodes() {
  TopologyOptions options;
  options.xml_text = kFourNodeTopologyXml;
  absl::StatusOr<Topology> t = LoadTopology(options);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *t : Topology{};
}

}  // namespace heatsink::runtime::testing

#endif  // HEATSINK_TESTS_RUNTIME_NUMA_FOUR_NODE_TOPOLOGY_H_
