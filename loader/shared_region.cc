#include "loader/shared_region.h"

#include <boost/interprocess/anonymous_shared_memory.hpp>
#include <boost/interprocess/mapped_region.hpp>
#include <string>

#include "seedloader/error.h"

namespace seedloader {

SharedRegion::SharedRegion(std::size_t bytes) {
  try {
    region_ = std::make_unique<boost::interprocess::mapped_region>(
        boost::interprocess::anonymous_shared_memory(bytes));
  } catch (const boost::interprocess::interprocess_exception& e) {
    throw Error("cannot map " + std::to_string(bytes) +
                " bytes of anonymous shared memory: " + e.what());
  }
  base_ = static_cast<std::byte*>(region_->get_address());
  size_ = bytes;
}

SharedRegion::~SharedRegion() = default;
SharedRegion::SharedRegion(SharedRegion&&) noexcept = default;
SharedRegion& SharedRegion::operator=(SharedRegion&&) noexcept = default;

}  // namespace seedloader
