#include "runtime/transport/data_plane.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "runtime/transport/foreground_traffic.h"
#include "runtime/transport/tcp_data_mover.h"
#include "runtime/transport/ucx_data_mover.h"

namespace heatsink::runtime {
namespace {

UcxMoverOptions ToUcxOptions(const DataPlaneOptions& options) {
  UcxMoverOptions out;
  out.ucx = options.ucx;
  out.tcp = options.tcp;
  out.put_chunk_bytes = options.ucx_put_chunk_bytes;
  return out;
}

}  // namespace

absl::StatusOr<TransportKind> ParseTransport(absl::string_view name) {
  if (name == "tcp") return TransportKind::kTcp;
  if (name == "ucx") return TransportKind::kUcx;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown transport '", name, "' (expected tcp or ucx)"));
}

absl::StatusOr<std::unique_ptr<DataMover>> MakeDataMover(const Clock* clock,
                                                         absl::string_view transport,
                                                         SegmentMemory* local,
                                                         EndpointResolver* resolver,
                                                         const DataPlaneOptions& options) {
  HS_ASSIGN_OR_RETURN(TransportKind kind, ParseTransport(transport));
  HS_RETURN_IF_ERROR(options.tcp.Validate());
  if (kind == TransportKind::kTcp) {
    return std::unique_ptr<DataMover>(
        std::make_unique<TcpDataMover>(clock, local, resolver, options.tcp));
  }
  HS_ASSIGN_OR_RETURN(std::unique_ptr<UcxDataMover> mover,
                      UcxDataMover::Create(clock, local, resolver, ToUcxOptions(options)));
  return std::unique_ptr<DataMover>(std::move(mover));
}

void DataPlane::Shutdown() {
  if (server_ != nullptr) server_->Shutdown();
  if (auto* tcp = dynamic_cast<TcpDataMover*>(mover_.get())) tcp->Shutdown();
  if (auto* ucx = dynamic_cast<UcxDataMover*>(mover_.get())) ucx->Shutdown();
}

absl::StatusOr<std::unique_ptr<DataPlane>> MakeDataPlane(const Clock* clock,
                                                         const DataPlaneOptions& plane_options,
                                                         SegmentMemory* local,
                                                         EndpointResolver* resolver) {
  // The server's foreground reads and the mover's copies share one tracker
  // (foreground_traffic.h).
  DataPlaneOptions options = plane_options;
  if (options.tcp.foreground == nullptr) {
    options.tcp.foreground = std::make_shared<ForegroundTraffic>(clock);
  }
  HS_ASSIGN_OR_RETURN(TransportKind kind, ParseTransport(options.transport));
  HS_RETURN_IF_ERROR(options.tcp.Validate());
  if (kind == TransportKind::kTcp) {
    auto mover = std::make_unique<TcpDataMover>(clock, local, resolver, options.tcp);
    HS_ASSIGN_OR_RETURN(std::unique_ptr<TcpDataServer> server,
                        TcpDataServer::Start(clock, local, options.tcp));
    return std::make_unique<DataPlane>(std::move(mover), std::move(server));
  }
  HS_ASSIGN_OR_RETURN(std::unique_ptr<UcxDataMover> mover,
                      UcxDataMover::Create(clock, local, resolver, ToUcxOptions(options)));
  HS_ASSIGN_OR_RETURN(std::unique_ptr<TcpDataServer> server,
                      TcpDataServer::Start(clock, local, options.tcp, mover.get()));
  return std::make_unique<DataPlane>(std::move(mover), std::move(server));
}

}  // namespace heatsink::runtime
