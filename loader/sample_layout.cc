#include "seedloader/sample_layout.h"

#include "seedloader/error.h"

namespace seedloader {

std::int64_t FieldSpec::elements() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

SampleLayout::SampleLayout(std::vector<FieldSpec> fields) : fields_(std::move(fields)) {
  for (std::size_t i = 0; i < fields_.size(); ++i) {
    const FieldSpec& f = fields_[i];
    if (f.name.empty())
      throw ConfigError("SampleLayout: field " + std::to_string(i) + " has no name");
    for (std::size_t j = 0; j < i; ++j) {
      if (fields_[j].name == f.name) {
        throw ConfigError("SampleLayout: field name '" + f.name + "' appears twice");
      }
    }
    for (std::int64_t d : f.shape) {
      if (d < 0)
        throw ConfigError("SampleLayout: field '" + f.name +
                          "' has a negative dimension");
    }
  }
}

std::size_t SampleLayout::index_of(const std::string& name) const {
  for (std::size_t i = 0; i < fields_.size(); ++i) {
    if (fields_[i].name == name) return i;
  }
  throw ConfigError("SampleLayout: no field named '" + name + "'");
}

std::size_t SampleLayout::bytes_per_sample() const {
  std::size_t total = 0;
  for (const FieldSpec& f : fields_) total += f.bytes();
  return total;
}

}  // namespace seedloader
