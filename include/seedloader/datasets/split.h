// Split: which part of a dataset that ships as fixed train and test files
// (Cifar10, Mnist) to read. A named value rather than a bool, so a call site says
// which split it reads.
#pragma once

namespace seedloader {

enum class Split { kTrain, kTest };

}  // namespace seedloader
