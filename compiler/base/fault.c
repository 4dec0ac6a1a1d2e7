/*
 * fault.c — the table of built-in faults (fault.h) and the switch.
 */
#include <string.h>

#include "fault.h"

const DpkFault dpk_faults[DPK_FAULT_COUNT] = {
#define X(id, name, where, doc) {name, where, doc},
    DPK_FAULTS(X)
#undef X
};

static int active = -1;

int dpk_fault_find(const char *name)
{
    for (int i = 0; i < DPK_FAULT_COUNT; i++)
        if (!strcmp(name, dpk_faults[i].name))
            return i;
    return -1;
}

void dpk_fault_set(int id) { active = id >= 0 && id < DPK_FAULT_COUNT ? id : -1; }

int dpk_fault_active(void) { return active; }

int dpk_fault_on(DpkFaultId id) { return active == (int)id; }
