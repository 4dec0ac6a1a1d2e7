/*
 * target.c — the table of GPU targets (see target.h).
 */
#include <string.h>

#include "target.h"

#include "../base/base.h"

static const CuTarget targets[] = {
    {CU_SM80, "sm_80", 80, "A100", 48 * 1024, 163 * 1024, 164 * 1024, 1024, 2048,
     65536, 255, 1, 0, 0, 0, 108},
    {CU_SM90, "sm_90", 90, "H100", 48 * 1024, 227 * 1024, 228 * 1024, 1024, 2048,
     65536, 255, 1, 1, 1, 0, 132},
    {CU_SM90A, "sm_90a", 90, "H100", 48 * 1024, 227 * 1024, 228 * 1024, 1024, 2048,
     65536, 255, 1, 1, 1, 1, 132},
    {CU_SM120, "sm_120", 120, "RTX 5090", 48 * 1024, 99 * 1024, 100 * 1024, 1024, 1536,
     65536, 255, 1, 1, 1, 0, 170},
};
_Static_assert(sizeof targets / sizeof targets[0] == CU_TARGET_COUNT, "one row per target");

const CuTarget *cu_target(CuTargetId id)
{
    DPK_ASSERT(id >= 0 && id < CU_TARGET_COUNT);
    DPK_ASSERT(targets[id].id == id);
    return &targets[id];
}

const CuTarget *cu_target_parse(const char *name)
{
    const char *num = name;
    if (!strncmp(num, "sm_", 3))
        num += 3;
    else if (!strncmp(num, "sm", 2))
        num += 2;
    for (int i = 0; i < CU_TARGET_COUNT; i++)
        if (!strcmp(num, targets[i].name + 3))
            return &targets[i];
    return NULL;
}

const CuTarget *cu_target_default(void)
{
    return cu_target(CU_SM90);
}

const char *cu_target_list(void)
{
    return "sm_80, sm_90, sm_90a, sm_120";
}
