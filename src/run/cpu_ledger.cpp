#include "run/cpu_ledger.hpp"

namespace edgeprof::detail {

CpuLedger& cpu_ledger() {
  static CpuLedger ledger;
  return ledger;
}

}  // namespace edgeprof::detail
