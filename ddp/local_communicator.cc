#include "seedloader/ddp/local_communicator.h"

#include <string>

#include "seedloader/error.h"

namespace seedloader::ddp {

void LocalCommunicator::check_root(int root) {
  if (root != 0)
    throw ConfigError("LocalCommunicator: broadcast root " + std::to_string(root) +
                      " does not exist (world size 1)");
}

}  // namespace seedloader::ddp
