// Faults 4 and 5: exceptions inside a worker (from get() or from worker_init)
// reach the consumer as WorkerError with worker id, sample index and the
// original message, without a deadlock, and the loader stays usable.
#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "loader/shared_layout.h"
#include "loader/shared_region.h"
#include "seedloader/data_loader.h"
#include "tests/fault/fault_fixture.h"
#include "tests/loader/test_datasets.h"

namespace seedloader {
namespace {

using testing_util::FaultTest;
using testing_util::HookedDataset;

// Batches of 4 in order, seed 3, with `workers` workers.
LoaderOptions batches_of_four(int workers) {
  LoaderOptions o;
  o.batch_size = 4;
  o.num_workers = workers;
  o.seed = 3;
  return o;
}

// The samples an epoch of `ds` delivers with `workers` workers under
// BadSample::kSkip.
std::uint64_t samples_when_skipping(const Dataset& ds, int workers) {
  LoaderOptions o = batches_of_four(workers);
  o.on_bad_sample = BadSample::kSkip;
  DataLoader loader(ds, o);
  std::uint64_t samples = 0;
  for (const Batch& b : loader) samples += b.size();
  return samples;
}

// The WorkerError an epoch of `ds` with `workers` workers ends with.
WorkerError epoch_error(const Dataset& ds, int workers) {
  DataLoader loader(ds, batches_of_four(workers));
  try {
    for (const Batch& b : loader) (void)b;
  } catch (const WorkerError& e) {
    return e;
  }
  ADD_FAILURE() << "the epoch ended without an error; " << workers << " workers";
  return WorkerError("none", {}, ErrorCode::kBatchFailed);
}

class GetThrowsTest : public FaultTest, public ::testing::WithParamInterface<bool> {};

TEST_P(GetThrowsTest, ExceptionIsRethrownWithIndexAndMessageAndNextEpochWorks) {
  // A flag the workers can see after fork: fail only while it is set.
  SharedRegion flag(4096);
  auto* failing = reinterpret_cast<volatile int*>(flag.base());
  *failing = 1;
  HookedDataset ds(40, [failing](std::uint64_t i) {
    if (i == 13 && *failing) throw DataError("corrupt record in shard-3.tar, sample 13");
  });
  LoaderOptions o;
  o.batch_size = 4;
  o.num_workers = 2;
  o.seed = 3;
  o.persistent_workers = GetParam();
  DataLoader loader(ds, o);
  try {
    for (const Batch& b : loader) (void)b;
    FAIL() << "the exception was lost";
  } catch (const WorkerError& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBatchFailed);
    EXPECT_EQ(e.failure().exception_type, "");  // a C++ DataError: none of its own
    EXPECT_EQ(e.failure().worker, 1);           // batch 3 -> worker 1
    EXPECT_EQ(e.failure().index, 13);
    EXPECT_EQ(e.failure().batch, 3);
    const std::string what = e.what();
    EXPECT_NE(what.find("worker 1 (pid"), std::string::npos) << what;
    EXPECT_NE(what.find("sample 13 of batch 3"), std::string::npos) << what;
    EXPECT_NE(what.find("corrupt record in shard-3.tar, sample 13"), std::string::npos)
        << what;
  }
  *failing = 0;
  loader.set_epoch(1);
  std::uint64_t samples = 0;
  for (const Batch& b : loader) samples += b.size();
  EXPECT_EQ(samples, 40u);
}

INSTANTIATE_TEST_SUITE_P(PersistentOrNot, GetThrowsTest, ::testing::Bool());

// A sample whose reading runs out of memory is bad input, named as such, in a
// worker and in the consumer's thread alike; the skip policy applies to it.
TEST_F(FaultTest, OutOfMemoryInGetIsADataErrorNamingDatasetAndSample) {
  HookedDataset ds(40, [](std::uint64_t i) {
    if (i == 13) throw std::bad_alloc();
  });
  for (int workers : {0, 2}) {
    DataLoader loader(ds, batches_of_four(workers));
    try {
      for (const Batch& b : loader) (void)b;
      FAIL() << "the failure was lost";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("HookedDataset: sample 13: out of memory reading it"),
                std::string::npos)
          << what;
    }
    EXPECT_EQ(samples_when_skipping(ds, workers), 40u) << workers << " workers";
  }
}

TEST_F(FaultTest, WorkerInitFailureIsReportedOnTheFirstBatch) {
  HookedDataset ds(40, [](std::uint64_t) {});
  LoaderOptions o;
  o.batch_size = 4;
  o.num_workers = 2;
  o.seed = 3;
  o.worker_init = [](int worker, std::uint64_t) {
    if (worker == 0) throw std::runtime_error("cannot open /data/index.bin");
  };
  DataLoader loader(ds, o);
  try {
    auto it = loader.begin();
    FAIL() << "worker_init's failure was lost";
  } catch (const WorkerError& e) {
    EXPECT_EQ(e.code(), ErrorCode::kWorkerInitFailed);
    EXPECT_EQ(e.failure().worker, 0);
    EXPECT_EQ(e.failure().batch, 0);
    const std::string what = e.what();
    EXPECT_NE(what.find("worker_init failed: cannot open /data/index.bin"),
              std::string::npos)
        << what;
  }
}

// As torch's iterator after a dataset's exception: the batch holding the sample
// fails, the worker lives on, and advancing again gives the batch after it.
TEST_F(FaultTest, AfterAGetExceptionTheIteratorGoesOnWithTheNextBatch) {
  HookedDataset ds(40, [](std::uint64_t i) {
    if (i == 6 || i == 21) throw DataError("bad sample " + std::to_string(i));
  });
  for (int workers : {0, 2}) {
    DataLoader loader(ds, batches_of_four(workers));
    std::vector<std::uint64_t> seen;
    std::vector<long long> failed;
    for (auto it = loader.begin(); !(it == loader.end());) {
      seen.push_back(it->number());
      for (;;) {
        try {
          ++it;
          break;
        } catch (const WorkerError& e) {
          ASSERT_TRUE(e.failure().recoverable) << e.what();
          failed.push_back(e.failure().batch);
        }
      }
    }
    EXPECT_EQ(failed, (std::vector<long long>{1, 5})) << workers << " workers";
    EXPECT_EQ(seen, (std::vector<std::uint64_t>{0, 2, 3, 4, 6, 7, 8, 9}))
        << workers << " workers";
  }
}

// start() waits for nothing, so a failed first batch is one ++ that throws, and
// the next ++ gives batch 1, where begin() could only throw.
TEST_F(FaultTest, AStartedIteratorGoesOnAfterAFailedFirstBatch) {
  HookedDataset ds(12, [](std::uint64_t i) {
    if (i == 1) throw DataError("bad sample 1");
  });
  for (int workers : {0, 2}) {
    DataLoader loader(ds, batches_of_four(workers));
    auto it = loader.start();
    try {
      ++it;
      FAIL() << "batch 0 holds the bad sample; " << workers << " workers";
    } catch (const WorkerError& e) {
      EXPECT_TRUE(e.failure().recoverable) << e.what();
      EXPECT_EQ(e.failure().batch, 0);
      EXPECT_EQ(e.failure().index, 1);
    }
    std::vector<std::uint64_t> seen;
    for (++it; !(it == loader.end()); ++it) seen.push_back(it->number());
    EXPECT_EQ(seen, (std::vector<std::uint64_t>{1, 2})) << workers << " workers";
  }
}

// What a Python dataset's exception crosses the loader as: its type travels with
// the error from a worker and from the consumer's own thread alike, the exception
// itself only from the consumer's thread (a worker's stays in the worker).
TEST_F(FaultTest, ADatasetsOwnExceptionIsReportedWithItsTypeAndInThreadItself) {
  HookedDataset ds(40, [](std::uint64_t i) {
    if (i == 13) {
      throw_as_dataset_exception(
          Error("HookedDataset[13]: KeyError: 13"), "mymodule.Missing",
          std::make_exception_ptr(std::out_of_range("the original")));
    }
  });
  for (int workers : {0, 2}) {
    const WorkerError e = epoch_error(ds, workers);
    EXPECT_EQ(e.code(), ErrorCode::kBatchFailed);
    EXPECT_TRUE(e.failure().recoverable);
    EXPECT_EQ(e.failure().index, 13);
    EXPECT_EQ(e.failure().exception_type, "mymodule.Missing") << workers << " workers";
    EXPECT_NE(std::string(e.what()).find("KeyError: 13"), std::string::npos) << e.what();
    if (workers == 0) {
      ASSERT_TRUE(e.failure().original);
      EXPECT_THROW(std::rethrow_exception(e.failure().original), std::out_of_range);
    } else {
      EXPECT_FALSE(e.failure().original);
    }
  }
}

// Marked as a dataset's own exception, a DataError is still bad input that
// on_bad_sample=kSkip replaces.
TEST_F(FaultTest, AMarkedDataErrorIsStillSkipped) {
  HookedDataset ds(40, [](std::uint64_t i) {
    if (i == 13)
      throw_as_dataset_exception(DataError("bad record 13"), "DataError", nullptr);
  });
  for (int workers : {0, 2})
    EXPECT_EQ(samples_when_skipping(ds, workers), 40u) << workers << " workers";
}

// A type name that does not fit the slot's field whole is left out, never cut (a
// cut name could be another type's): the error comes without one.
TEST_F(FaultTest, ATypeNameTooLongForTheSlotIsLeftOutNotCut) {
  for (const std::size_t length : {kErrorTypeBytes - 1, kErrorTypeBytes}) {
    const std::string name(length, 'T');
    HookedDataset ds(40, [&name](std::uint64_t i) {
      if (i == 2) throw_as_dataset_exception(Error("bad"), name, nullptr);
    });
    for (int workers : {0, 2}) {
      EXPECT_EQ(epoch_error(ds, workers).failure().exception_type,
                length < kErrorTypeBytes ? name : "")
          << length << " characters, " << workers << " workers";
    }
  }
}

TEST_F(FaultTest, InThreadExceptionIsReportedTheSameWay) {
  HookedDataset ds(40, [](std::uint64_t i) {
    if (i == 6) throw DataError("truncated image 6");
  });
  LoaderOptions o;
  o.batch_size = 4;
  o.seed = 3;
  DataLoader loader(ds, o);
  try {
    for (const Batch& b : loader) (void)b;
    FAIL() << "the exception was lost";
  } catch (const WorkerError& e) {
    EXPECT_EQ(e.failure().index, 6);
    EXPECT_NE(std::string(e.what()).find("truncated image 6"), std::string::npos);
  }
}

}  // namespace
}  // namespace seedloader
