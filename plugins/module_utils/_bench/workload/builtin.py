# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The built-in natural-text workload, written for this collection (no dataset text).

Eight categories of ten prompts each. Speculative decoding accepts more draft
tokens on predictable text (code, JSON, translation) than on open text (stories),
so a set that mixes them measures a drafter the way users will meet it. A tuple
of strings is a multi-turn item: each later turn is sent with the model's own
earlier answers in the conversation, as MT-Bench does.
"""

from __future__ import annotations

BUILTIN_NAME = "builtin-v1"

BUILTIN = {
    "chat": [
        ("I just moved to a city where I do not know anyone. What are a few low-pressure ways to meet people "
         "in the first month?"),
        "My houseplants keep dying even though I water them every day. What might I be doing wrong?",
        (
            "What should I pack for a three-day hiking trip in the mountains in early autumn?",
            "Now cut that list down to what fits in a 30 litre backpack, and say what you removed.",
        ),
        "How do I politely tell a colleague that their meetings run too long?",
        "Suggest a weekly routine for someone who wants to start running but has never exercised.",
        (
            "I want to learn to cook. Which five dishes teach the most basic techniques?",
            "Pick the easiest of those and walk me through it step by step.",
        ),
        "What is a good way to keep track of birthdays without relying on social media reminders?",
        "Explain, in plain words, why sleeping in on weekends can make Monday mornings harder.",
        "I have a job interview tomorrow for a library assistant role. What questions should I expect?",
        "Give me some ideas for a rainy Sunday afternoon with two children aged six and nine.",
    ],
    "code": [
        ("Write a Python function that returns the n-th Fibonacci number iteratively, with a docstring and "
         "type hints."),
        ("Write a bash script that finds every file larger than 100 MB under a directory given as its first "
         "argument and prints them sorted by size."),
        (
            "Write a Python class for a fixed-size ring buffer with push, pop and a length method.",
            "Add unit tests for that class using pytest, covering wrap-around and popping from an empty buffer.",
        ),
        ("Write a SQL query that lists, for each customer, their total order value in 2024, highest first, "
         "from tables customers(id, name) and orders(id, customer_id, placed_at, amount)."),
        "Write a JavaScript function that debounces another function by a given number of milliseconds.",
        "Write a Go program that reads lines from standard input and prints how many times each word appears.",
        (
            "Write a Rust function that checks whether a string is a palindrome, ignoring case and spaces.",
            "Now make it work on Unicode grapheme clusters and explain what changed.",
        ),
        ("Write a Python script that parses an Apache access log and prints the ten most frequent client "
         "addresses."),
        "Implement binary search in C over a sorted array of integers and return the index or -1.",
        ("Write a Dockerfile for a small Flask application that listens on port 8080 and runs as a non-root "
         "user."),
    ],
    "math": [
        ("A train leaves at 09:40 and travels 273 km at an average of 84 km/h. At what time does it arrive? "
         "Show your working."),
        "Solve for x: 3(x - 4) + 7 = 2x + 9. Show each step.",
        (
            "A rectangle has a perimeter of 46 cm and an area of 120 square centimetres. Find its sides.",
            "If each side grows by 10 percent, by how much does the area grow, in percent?",
        ),
        "What is the sum of all integers from 1 to 500 that are divisible by 3 or by 5?",
        ("A shop lowers a price by 20 percent and later raises the new price by 20 percent. Is the final price"
         " higher or lower than the first, and by how much?"),
        "Compute the derivative of f(x) = x^3 * ln(x) and find where it is zero for x > 0.",
        "Two dice are rolled. What is the probability that the sum is a prime number?",
        (
            "A tank fills through pipe A in 6 hours and through pipe B in 9 hours. How long with both open?",
            ("A leak now empties the full tank in 12 hours. How long does filling take with both pipes and the "
             "leak?"),
        ),
        "Find the greatest common divisor of 1071 and 462 with the Euclidean algorithm, showing every step.",
        ("An investment of 5000 grows at 4 percent a year, compounded yearly. What is it worth after 7 years, "
         "to the nearest unit?"),
    ],
    "reasoning": [
        ("Three friends, Ana, Ben and Cleo, each own one pet: a cat, a dog or a parrot. Ana is allergic to "
         "fur, and Ben's pet cannot fly. Cleo does not own the dog. Who owns which pet?"),
        "If every blorp is a snig and some snigs are green, must some blorps be green? Explain.",
        (
            ("A farmer must cross a river with a wolf, a goat and a cabbage, taking one at a time. How does he do "
             "it?"),
            "Now suppose the boat holds two items besides the farmer. What is the fewest number of crossings?",
        ),
        "A clock shows 3:15. What is the angle between the hour and minute hands?",
        ("You have two ropes that each take exactly one hour to burn but burn unevenly. How can you measure 45"
         " minutes?"),
        "Is the statement 'this sentence has five words' true or false? Count carefully and explain.",
        ("A library's visitor numbers fell after it extended its opening hours. Give three explanations that "
         "could account for this and how you would tell them apart."),
        (
            "Which weighs more, a kilogram of feathers or a kilogram of iron?",
            "Then why does a bag of feathers feel different to carry than a bar of iron of the same mass?",
        ),
        "In a race you overtake the person in second place. What position are you in now?",
        ("A bat and a ball cost 1.10 in total, and the bat costs 1.00 more than the ball. What does the ball "
         "cost? Explain why the quick answer is wrong."),
    ],
    "summarisation": [
        ("Summarise in three sentences: The town council met on Tuesday to discuss the old bus depot. "
         "Residents asked for a park, while two developers proposed flats with shops on the ground floor. The "
         "council's engineer said the soil needs cleaning before any building, which would take a year. "
         "Members agreed to commission a study of costs for both options and to hold a public vote in the "
         "spring."),
        ("Summarise this for a busy manager in two bullet points: Our support queue grew by 30 percent last "
         "quarter, mostly password resets after the login page change. Average first reply time rose from 2 to"
         " 5 hours. A self-service reset link was added in week 9 and resets fell by half within a fortnight, "
         "but the backlog has not cleared yet."),
        (
            ("Summarise: A small bakery switched from paper order slips to a tablet app. In the first week, orders"
             " were lost twice when the tablet ran out of battery, and the staff disliked typing with floury "
             "hands. After they mounted the tablet on a charging stand and added large buttons for the ten most "
             "common items, errors fell below the paper level and the owner could see daily totals at a glance."),
            "Now write the same summary as a single sentence a child would understand.",
        ),
        ("Give a one-paragraph summary: Researchers tagged forty sea turtles with satellite trackers. Most "
         "females returned to the beach where they hatched, travelling up to 2000 km. Males wandered more "
         "widely and some never came near the coast. Storms shifted routes for weeks, but the animals "
         "corrected course afterwards."),
        ("Summarise the main argument: Remote work saves commuting time, but teams that never meet in person "
         "report weaker trust and slower decisions. Companies that bring people together a few days a month "
         "seem to keep most of the savings while avoiding the worst of the loss."),
        ("Condense into a headline and a one-line subtitle: The city's new bicycle lanes were used by 12,000 "
         "riders on their first weekend, double the forecast, while car traffic on the same streets fell by a "
         "fifth and local shops reported no drop in sales."),
        ("Summarise the key steps: To replace a bicycle inner tube, shift to the smallest gear, open the "
         "brake, remove the wheel, lever one side of the tyre off the rim, pull out the old tube, find and "
         "remove whatever caused the puncture, fit the new tube slightly inflated, push the tyre back on by "
         "hand, inflate to the pressure marked on the tyre, and refit the wheel."),
        ("Summarise this meeting note in three action items with owners: Priya will draft the budget by "
         "Friday. Tom raised that the supplier contract expires next month and offered to call them. Everyone "
         "agreed the launch moves one week later; Lea will tell the marketing team."),
        ("Summarise in 50 words: Volcanic ash can ground aircraft because it melts in jet engines and forms "
         "glassy deposits that block airflow. Airlines rely on advisory centres that model where ash drifts. "
         "Better sensors now let some flights continue through thin ash, but thick clouds still close "
         "airspace."),
        ("Summarise the pros and cons: A four-day working week was trialled by sixty firms for six months. "
         "Most kept it. Staff reported less burnout and fewer sick days; output held steady in offices but "
         "dipped in some shift-based businesses, which needed extra hires to cover the fifth day."),
    ],
    "extraction": [
        ("Extract a JSON object with keys name, email and phone from: 'Hi, this is Marta Kowalski, you can "
         "reach me at marta.k@example.org or on +48 601 234 567.' Reply with JSON only."),
        ("Turn this into a JSON list of objects with keys item, quantity and unit: 'two kilos of flour, a "
         "dozen eggs, 500 grams of butter, three lemons'. Reply with JSON only."),
        (
            ("From this text, extract every date and what happens on it as JSON: 'The office closes on 24 "
             "December, reopens on 2 January, and the audit starts on 15 January.'"),
            "Add a weekday field to each entry, assuming the year 2025.",
        ),
        ("Extract the invoice number, total amount, currency and due date as JSON from: 'Invoice INV-2041, "
         "total due 1,250.00 EUR, payable by 31 March 2025.'"),
        ('Return JSON with fields title, author, year and pages for: \'The field guide "Mosses of the North" by'
         " H. Lindqvist came out in 1998 and runs to 312 pages.'"),
        ("Parse these server log lines into a JSON array with timestamp, level and message: '2025-01-04 "
         "10:02:11 WARN disk 91% full' and '2025-01-04 10:05:40 ERROR backup failed: no space left'."),
        ("Extract all people and their roles as JSON from: 'The project is led by Sam Ortiz, with Jo Lee as "
         "designer and Ravi Nair handling testing.'"),
        (
            ("Convert this address into JSON with street, number, postcode, city and country: 'Hauptstrasse 12, "
             "10115 Berlin, Germany'."),
            "Now do the same for 'Flat 3, 27 Mill Lane, Leeds LS1 4AB, United Kingdom', adding a flat field.",
        ),
        ("Produce a JSON object describing this product, with keys brand, model, storage_gb, colour and price:"
         " 'Nimbus X2 phone, 128 GB, forest green, now 349 dollars.'"),
        ("Give me the flight details as JSON (airline, flight, from, to, departure, arrival): 'AB 4512 leaves "
         "Lisbon at 07:35 and lands in Dublin at 10:05.'"),
    ],
    "translation": [
        ("Translate into French: 'The meeting has been moved to Thursday afternoon because the room is being "
         "painted.'"),
        ("Translate into Spanish: 'Please keep your ticket until the end of the journey; inspectors may ask to"
         " see it.'"),
        (
            "Translate into German: 'Our shop will be closed for stocktaking on the first Monday of March.'",
            "Now give the same sentence in a more formal register, as it would appear on an official notice.",
        ),
        ("Translate into Italian: 'Could you recommend a quiet restaurant near the station that is open on "
         "Sundays?'"),
        ("Translate into Portuguese: 'The software update fixes a problem that made the battery drain "
         "overnight.'"),
        ("Translate into English: 'Le train pour Lyon partira avec vingt minutes de retard en raison de "
         "travaux sur la voie.'"),
        (
            "Translate into Dutch: 'We are looking for volunteers to help at the summer festival in the park.'",
            "Translate your Dutch sentence back into English and point out any shift in meaning.",
        ),
        ("Translate into Japanese, and then give a romanised reading: 'Thank you for waiting; your table is "
         "ready.'"),
        "Translate into Polish: 'The museum is free on the first Sunday of every month.'",
        ("Translate into English: 'Der Vertrag verlängert sich automatisch um ein Jahr, wenn er nicht drei "
         "Monate vor Ablauf gekündigt wird.'"),
    ],
    "creative": [
        "Write a short poem about a lighthouse keeper on the last night before the light is automated.",
        "Write the opening paragraph of a mystery story set in a snowed-in mountain railway station.",
        (
            ("Invent a new board game for four players in which the board changes shape during play. Describe the "
             "rules."),
            "Write the short story of the first game ever played with those rules.",
        ),
        "Describe a market in a floating city from the point of view of a child visiting for the first time.",
        "Write a letter from a retired robot gardener to the family it used to work for.",
        "Write a limerick about a cat who refuses to use the new cat door.",
        (
            ("Create a character: a cartographer who maps places that do not exist yet. Give her a name, a flaw "
             "and a goal."),
            "Now write a scene in which her flaw gets in the way of her goal.",
        ),
        "Write a fable, with a moral at the end, about a river that wanted to flow uphill.",
        "Write a dialogue between the Moon and the tide arguing about who is in charge.",
        "Write a product description for an umbrella that only works when you are in a good mood.",
    ],
}


def builtin_items() -> list:
    """(category, turns) of every built-in item, in a fixed order (categories as above)."""
    out = []
    for category, prompts in BUILTIN.items():
        for prompt in prompts:
            out.append((category, (prompt,) if isinstance(prompt, str) else tuple(prompt)))
    return out
