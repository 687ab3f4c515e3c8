// SPDX-License-Identifier: MIT
/* The unique ids and communicators of nccl-api-tour: every way NCCL creates and splits one. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nccl.h"
#include "nccl_double.h"
#include "nccl_ground_truth.h"
#include "rank_launcher.h"
#include "nccl_api_tour/tour.h"

/* ---- ids and communicators ---- */

/* Every rank makes its ids and publishes them; a communicator uses one rank's id. */
void make_unique_ids(struct tour *tour)
{
	char path[PATH_MAX];
	ncclResult_t ret;

	for (int i = 0; i < IDS_PER_RANK; i++) {
		ret = ncclGetUniqueId(&tour->own_ids[i]);
		ground_truth_unique_id(&tour->log, ret, &tour->own_ids[i]);
		expect_result(tour, "ncclGetUniqueId", ret, ncclSuccess);
	}
	ret = ncclGetUniqueId(NULL);
	log_failed_unique_id(tour, ret);
	expect_result(tour, "ncclGetUniqueId(NULL)", ret, ncclInvalidArgument);
	snprintf(path, sizeof(path), UNIQUE_ID_FILE_FORMAT, tour->options->log_dir, tour->rank);
	if (write_file_atomically(path, tour->own_ids, sizeof(tour->own_ids)) < 0)
		die(tour, 2,
		    errno == ENAMETOOLONG ? "the log directory's path is too long"
					  : "cannot write the unique ids to the log directory");
}

static void published_id(const struct tour *tour, int rank, int which, ncclUniqueId *id)
{
	ncclUniqueId ids[IDS_PER_RANK];
	char path[PATH_MAX];

	snprintf(path, sizeof(path), UNIQUE_ID_FILE_FORMAT, tour->options->log_dir, rank);
	read_published_file(path, ids, sizeof(ids));
	*id = ids[which];
}

static void init_rank(struct tour *tour, ncclComm_t *comm, int nranks, const ncclUniqueId *id,
		      int rank, bool with_config, ncclConfig_t *config, ncclResult_t expected)
{
	ncclResult_t ret = with_config ? ncclCommInitRankConfig(comm, nranks, *id, rank, config)
				       : ncclCommInitRank(comm, nranks, *id, rank);

	ground_truth_init_rank(&tour->log, ret, comm, nranks, id, rank, with_config, config,
			       hash_of(*comm));
	expect_result(tour, with_config ? "ncclCommInitRankConfig" : "ncclCommInitRank", ret,
		      expected);
}

void create_communicators(struct tour *tour)
{
	ncclConfig_t zeroed_config;
	ncclUniqueId world_id, config_id, scalable_id;
	ncclComm_t failed = NULL;
	int devlist[2] = { PAIR_DEVICE_0, PAIR_DEVICE_1 };
	ncclResult_t ret;

	published_id(tour, 0, 0, &world_id);
	published_id(tour, tour->nranks - 1, 1, &config_id);
	published_id(tour, 1, 2, &scalable_id);

	init_rank(tour, &failed, 0, &world_id, 0, false, NULL, ncclInvalidArgument);
	init_rank(tour, &tour->world, tour->nranks, &world_id, tour->rank, false, NULL,
		  ncclSuccess);

	/* The double checks the magic of a config: a zeroed one is refused. */
	memset(&zeroed_config, 0, sizeof(zeroed_config));
	init_rank(tour, &failed, tour->nranks, &config_id, tour->rank, true, &zeroed_config,
		  ncclInvalidArgument);
	tour->config = (ncclConfig_t)NCCL_CONFIG_INITIALIZER;
	tour->config.blocking = 1;
	init_rank(tour, &tour->configured, tour->nranks, &config_id, tour->rank, true,
		  &tour->config, ncclSuccess);

	ret = ncclCommInitRankScalable(&failed, tour->nranks, tour->rank, 0, &scalable_id, NULL);
	log_scalable(tour, ret, &failed, tour->nranks, tour->rank, 0, &scalable_id, NULL);
	expect_result(tour, "ncclCommInitRankScalable(nId 0)", ret, ncclInvalidArgument);
	ret = ncclCommInitRankScalable(&tour->scalable, tour->nranks, tour->rank, 1, &scalable_id,
				       &tour->config);
	log_scalable(tour, ret, &tour->scalable, tour->nranks, tour->rank, 1, &scalable_id,
		     &tour->config);
	expect_result(tour, "ncclCommInitRankScalable", ret, ncclSuccess);

	ret = ncclCommInitAll(tour->pair, 0, devlist);
	log_init_all(tour, ret, tour->pair, 0, devlist);
	expect_result(tour, "ncclCommInitAll(ndev 0)", ret, ncclInvalidArgument);
	ret = ncclCommInitAll(tour->pair, 2, devlist);
	log_init_all(tour, ret, tour->pair, 2, devlist);
	expect_result(tour, "ncclCommInitAll", ret, ncclSuccess);
}

/* Every rank makes every split of the world in the same order: a split is collective. */
void split_world(struct tour *tour)
{
	int last = tour->nranks - 1;
	int nobody = -1;

	tour->reversed = split(tour, tour->world, REVERSED_COLOR, last - tour->rank, &tour->config,
			       ncclSuccess);
	tour->colored =
		split(tour, tour->world, tour->rank == last ? NCCL_SPLIT_NOCOLOR : SOME_COLOR,
		      tour->rank, NULL, ncclSuccess);
	/*
	 * Refused before the split starts: no rank waits for the others, and the library does not
	 * count it among the parent's splits, so a rank may make it alone.
	 */
	if (tour->rank == 0 || !tour->options->lone_refused_split)
		split(tour, tour->world, INVALID_COLOR, tour->rank, NULL, ncclInvalidArgument);
	/* Nobody left out: every rank takes part and the child has them all. */
	tour->shrunk = shrink(tour, tour->world, &nobody, 0, NCCL_SHRINK_DEFAULT, ncclSuccess);
	tour->doomed = split(tour, tour->world, DOOMED_COLOR, tour->rank, NULL, ncclSuccess);
}
